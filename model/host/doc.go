// Package host models CloudStack's host Status (com.cloud.host.Status, spec
// 2.3): the status values with their flags, the events and the transition
// table the agent manager drives.
package host

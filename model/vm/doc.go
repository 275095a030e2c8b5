// Package vm models CloudStack's VirtualMachine.State finite-state machine
// (spec 2.1): states, events, the s_fsm transition table and power states.
// It is the single source of truth that impl/ drives and tests check against.
package vm

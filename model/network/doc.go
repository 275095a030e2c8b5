// Package network models CloudStack's Network.State finite-state machine
// (spec 2.2). Note the spec's warning: the network DAO write is not a
// compare-and-set, so Next only says what the FSM allows, not what a racing
// writer will see.
package network

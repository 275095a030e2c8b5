package impl

import (
	"time"

	"github.com/csconform/csconform/model/vm"
)

// Message kinds on the agent link, named after CloudStack's commands and answers.
const (
	MsgStartup       = "StartupCommand"     // agent → MS, carries a full report
	MsgStartupAnswer = "StartupAnswer"      // MS → agent, carries ping.interval
	MsgReady         = "ReadyCommand"       // MS → agent
	MsgPing          = "PingRoutingCommand" // agent → MS, carries a report of powered-on domains
	MsgPingAnswer    = "PingAnswer"         // MS → agent
	MsgShutdown      = "ShutdownCommand"    // agent → MS on a graceful agent stop
	MsgStart         = "StartCommand"       // MS → agent
	MsgStop          = "StopCommand"        // MS → agent
	MsgDeleteVolume  = "DeleteCommand"      // MS → agent
	// MsgPrepareForMigration goes to a migration's destination (its NICs and disks made ready);
	// MsgMigrate to its source, with Target the destination host.
	MsgPrepareForMigration = "PrepareForMigrationCommand"
	MsgMigrate             = "MigrateCommand"
	MsgCheckHealth         = "CheckHealthCommand"
	MsgCheckOnHost         = "CheckOnHostCommand"         // MS → a neighbour: is Target's storage heartbeat beating?
	MsgFence               = "FenceCommand"               // MS → a neighbour: fence VMName on Target (KVMFencer)
	MsgCheckVM             = "CheckVirtualMachineCommand" // MS → agent: the power state of VMName
	MsgPingTest            = "PingTestCommand"            // MS → a router's host: have router VMName ping PrivateIP
	MsgAnswer              = "Answer"                     // the reply to any request; Seq names the request
)

// Message is one frame on the agent link. It is a flat struct so that the real transport can encode it
// as JSON without a registry of types.
type Message struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	HostID string `json:"hostId,omitempty"`

	// Reports (Startup, Ping): the powered-on domains, as KVM sends only those.
	Report      []string  `json:"report,omitempty"`
	HasReport   bool      `json:"hasReport,omitempty"`
	OutOfBand   bool      `json:"outOfBand,omitempty"`
	CollectedAt time.Time `json:"collectedAt,omitzero"`

	// StartupAnswer
	PingInterval time.Duration `json:"pingInterval,omitempty"`
	SendStartup  bool          `json:"sendStartup,omitempty"` // PingAnswer asks the agent to re-send startup

	// Start / Stop / Delete
	Domain     *DomainSpec   `json:"domain,omitempty"`
	WaitReady  time.Duration `json:"waitReady,omitempty"` // a router start answers once the guest is ready
	VMName     string        `json:"vmName,omitempty"`
	CheckFirst bool          `json:"checkBeforeCleanup,omitempty"`
	Path       string        `json:"path,omitempty"`

	// CheckOnHost / Fence / CheckVirtualMachine (HA investigation, spec 8 item 2)
	Target        string `json:"target,omitempty"`        // the investigated host
	CheckActivity bool   `json:"checkActivity,omitempty"` // Fence: also look for the VM's disk activity (the H1 fix); CheckOnHost: for VMNames' (the H2 fix)
	// VMNames: CheckOnHost with CheckActivity, the VMs the database puts on the target host
	VMNames []string `json:"vmNames,omitempty"`
	// PingTest: the guest address the router (VMName) pings (UserVmDomRInvestigator.testUserVM)
	PrivateIP string `json:"privateIp,omitempty"`

	// Answer
	Result  bool   `json:"result,omitempty"`
	Details string `json:"details,omitempty"`
	// CheckVirtualMachineAnswer's state
	Power vm.PowerState `json:"power,omitempty"`
}

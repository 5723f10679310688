package faultyserver

import (
	"math/rand/v2"
	"time"
)

// SynDrop has the kernel drop the SYN that opens a new connection to the
// instance (an iptables rule on its port, which the harness adds and
// removes), with probability P: a client sees its connection attempt time
// out, as for a host that does not answer, while connections already open
// go on. The server itself serves as usual.
//
// JSON: {"mode": "syn-drop"}, {"mode": "syn-drop", "p": 0.5}.
type SynDrop struct {
	// P is the probability that a SYN is dropped, within (0,1]; default 1.
	P float64 `json:"p"`
	NetworkLevel
	Health
}

func init() { register(SynDrop{P: 1}) }

// Mode returns "syn-drop".
func (SynDrop) Mode() string { return "syn-drop" }

// Validate checks p and health_status.
func (f SynDrop) Validate() error {
	if err := checkDropP(f.P); err != nil {
		return err
	}
	return f.Health.validate()
}

// Plan serves the request for base: the drops are the kernel's.
func (SynDrop) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

// Drops drops P of the SYNs to the instance's port.
func (f SynDrop) Drops() []Drop {
	return []Drop{{Dir: ToInstance, SYN: true, P: f.P}}
}

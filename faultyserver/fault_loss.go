package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Loss has the kernel drop a fraction P of the instance's packets, in both
// directions (iptables rules on its port, which the harness adds and
// removes): TCP retransmits what was lost, after its retransmission
// timeout (at least 200 ms on Linux), so an unlucky request is late by
// that much while the others are not. The server itself serves as usual.
//
// JSON: {"mode": "loss", "p": 0.05}.
type Loss struct {
	// P is the probability that a packet is dropped, within (0,1];
	// required.
	P float64 `json:"p"`
	NetworkLevel
	Health
}

func init() { register(Loss{}) }

// Mode returns "loss".
func (Loss) Mode() string { return "loss" }

// Validate checks p and health_status.
func (f Loss) Validate() error {
	if f.P == 0 {
		return fmt.Errorf("p: is required: the probability that a packet is dropped, within (0,1], e.g. 0.05")
	}
	if err := checkDropP(f.P); err != nil {
		return err
	}
	return f.Health.validate()
}

// Plan serves the request for base: the loss is the kernel's. It draws
// nothing from r, unlike the simulator's plan (SimulatedPlan), which draws
// from the instance's random source for each request: under loss a
// simulated instance's later draws (service times, another fault's
// choices) are not those of a server with the same seed.
func (Loss) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

// Drops drops P of the packets to the instance's port and P of those from
// it.
func (f Loss) Drops() []Drop {
	return []Drop{{Dir: ToInstance, P: f.P}, {Dir: FromInstance, P: f.P}}
}

// Drop is one class of an instance's TCP packets that a network fault has
// the kernel drop; the harness writes it as a packet filter rule.
type Drop struct {
	Dir Direction
	// SYN restricts the drop to connection requests (SYN without ACK);
	// only with ToInstance.
	SYN bool
	// P is the probability that a matching packet is dropped, within
	// (0,1]; 1 drops every one.
	P float64
}

// Direction is which way a dropped packet travels.
type Direction int

// Directions of a Drop.
const (
	// ToInstance: client to server, to the instance's port.
	ToInstance Direction = iota
	// FromInstance: server to client, from the instance's port.
	FromInstance
)

// checkDropP checks a drop probability.
func checkDropP(p float64) error {
	if !(p > 0 && p <= 1) { // also rejects NaN
		return fmt.Errorf("p: must be within (0,1], got %v", p)
	}
	return nil
}

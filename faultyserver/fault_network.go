package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// NetworkFault is a fault that the kernel's packet filter carries out on an
// instance's traffic (iptables rules on its port), rather than the server:
// the server and the sidecar refuse it (SetFault), and the harness applies
// it to the instance's address for as long as the fault lasts.
type NetworkFault interface {
	Fault
	networkLevel()
}

// IsNetworkFault reports whether f is carried out by the kernel's packet
// filter, not the server.
func IsNetworkFault(f Fault) bool {
	_, ok := f.(NetworkFault)
	return ok
}

// NetworkLevel is embedded by network faults: it marks them.
type NetworkLevel struct{}

func (NetworkLevel) networkLevel() {}

// errNetworkFault is SetFault's answer to a network-level fault.
func errNetworkFault(f Fault) error {
	return fmt.Errorf("mode: %q drops packets in the kernel, not in the server; the harness applies it to the instance's port", f.Mode())
}

// LossRTO is the simulator's retransmission timeout under loss: Linux's
// minimum of 200 ms plus what a loopback run adds (lossy-instance's late
// requests took 214 to 219 ms with a 2 ms service time).
const LossRTO = 210 * time.Millisecond

// planSeen models loss as the delay its retransmissions put on a request
// (see SimulatedPlan): the request and its answer are a packet each, each
// lost with probability p; a lost packet is sent again after LossRTO, and
// each further loss of it doubles the wait, as TCP's backoff does. Two
// packets a request match lossy-instance's real run: 10.2% of the
// instance's requests were late at p 0.05, and 1-(0.95)^2 is 9.75%. The
// delay is on the way in, holding no worker; a connection's handshake
// (keepalive: false) is not modelled. It draws from r, the instance's
// random source (at least twice a request), where the server's Plan draws
// nothing.
//
// A packet still lost after lossGiveUp of waiting never arrives for the
// client: the request hangs until its timeout (at p 1, a partition, every
// one does).
func (f Loss) planSeen(base time.Duration, r *rand.Rand) Action {
	if f.P >= 1 {
		return Action{Kind: ActionHang}
	}
	var late time.Duration
	for range 2 {
		for rto := LossRTO; r.Float64() < f.P; rto *= 2 {
			late += rto
			if late > lossGiveUp {
				return Action{Kind: ActionHang}
			}
		}
	}
	return Action{Kind: ActionServe, Service: base, Latency: late}
}

// lossGiveUp bounds the retransmission delay the simulator gives a
// request: beyond it the request hangs (no run's timeout is that long).
const lossGiveUp = 10 * time.Minute

func (SynDrop) unmodeled() string {
	return "syn-drop drops connection attempts in the kernel, which the simulator does not model"
}

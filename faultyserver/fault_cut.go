package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Cut cuts answers off part-way: the answer's headers go out with its full
// Content-Length, then After bytes of its body, then its connection is
// closed (Then "close", a FIN) or reset (Then "reset", an RST). The client
// sees a truncated body: what its library makes of that is the point.
// P is the share of answers cut, drawn per request.
//
// Over HTTP/2 (h2c, gRPC) "close" closes the connection, ending every
// stream on it, and "reset" resets the request's stream alone. The fake
// server's gRPC answer is a few bytes, shorter than any useful After; cut
// gRPC answers through a sidecar whose upstream answers more. An answer
// no longer than After is not cut.
//
// JSON: {"mode": "cut", "after": "1KiB", "then": "close", "p": 1}.
type Cut struct {
	// After is the bytes of the body sent before the cut; default 1KiB.
	After ByteSize `json:"after"`
	// Then is "close" (default) or "reset".
	Then string `json:"then"`
	// P is the probability that an answer is cut; default 1.
	P float64 `json:"p"`
	Health
}

// Cut endings.
const (
	CutClose = "close"
	CutReset = "reset"
)

func init() { register(Cut{After: 1 << 10, Then: CutClose, P: 1}) }

// Mode returns "cut".
func (Cut) Mode() string { return "cut" }

// Validate checks after, then, p and health_status.
func (f Cut) Validate() error {
	if f.After < 0 {
		return fmt.Errorf("after: must be >= 0 bytes, got %d", int64(f.After))
	}
	switch f.Then {
	case CutClose, CutReset:
	default:
		return fmt.Errorf("then: must be %q or %q, got %q", CutClose, CutReset, f.Then)
	}
	if !(f.P > 0 && f.P <= 1) {
		return fmt.Errorf("p: must be within (0,1], got %v", f.P)
	}
	return f.Health.validate()
}

// Plan serves the request and cuts its answer, with probability p.
func (f Cut) Plan(base time.Duration, r *rand.Rand) Action {
	a := Action{Kind: ActionServe, Service: base}
	if f.P >= 1 || r.Float64() < f.P {
		a.Cut, a.CutAfter, a.CutReset = true, int64(f.After), f.Then == CutReset
	}
	return a
}

func (Cut) unmodeled() string {
	return "cut acts on the bytes of each answer, which the simulator does not model"
}

package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrorRate fails a fraction P of requests like [Fail] and serves the rest
// normally. Which requests fail is drawn from the server's seeded source.
//
// JSON: {"mode": "error-rate", "p": 0.1, "status": 503, "delay": "1ms",
// "grpc_code": "UNAVAILABLE"}.
// ParseFault fills omitted parameters with the defaults noted; a Go literal
// must set Status itself.
type ErrorRate struct {
	// P is the probability that a request fails, within [0,1].
	P float64 `json:"p"`
	// Status is the answered status of a failed request, within [400,599];
	// default 503.
	Status int `json:"status"`
	// Delay is the wait before a failed request is answered, >= 0; default
	// 1ms.
	Delay Duration `json:"delay"`
	// GRPCCode names the gRPC status code of a failed gRPC call, as for
	// [Fail]; "" means UNAVAILABLE.
	GRPCCode string `json:"grpc_code,omitempty"`
	Health
}

func init() {
	register(ErrorRate{Status: 503, Delay: Duration(time.Millisecond)})
}

// Mode returns "error-rate".
func (ErrorRate) Mode() string { return "error-rate" }

// Validate checks p, status and delay.
func (f ErrorRate) Validate() error {
	if !(f.P >= 0 && f.P <= 1) { // also rejects NaN
		return fmt.Errorf("p: must be within [0,1], got %v", f.P)
	}
	if err := validateFailure(f.Status, f.Delay, f.GRPCCode); err != nil {
		return err
	}
	return f.Health.validate()
}

// Plan draws one uniform number from r: below P the request fails,
// otherwise it is served for base.
func (f ErrorRate) Plan(base time.Duration, r *rand.Rand) Action {
	if r.Float64() < f.P {
		return Action{Kind: ActionFail, Status: f.Status, Delay: time.Duration(f.Delay), GRPCCode: actionGRPCCode(f.GRPCCode)}
	}
	return Action{Kind: ActionServe, Service: base}
}

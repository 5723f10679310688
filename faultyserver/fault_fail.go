package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fail answers every request with an error status after a short delay,
// without occupying a worker: a fast-failing instance.
//
// A gRPC call is answered with the gRPC status GRPCCode instead of Status.
//
// JSON: {"mode": "fail", "status": 503, "delay": "1ms", "grpc_code": "UNAVAILABLE"}.
// ParseFault fills omitted parameters with the defaults noted; a Go literal
// must set Status itself.
type Fail struct {
	// Status is the answered status, within [400,599]; default 503.
	Status int `json:"status"`
	// Delay is the wait before answering, >= 0; default 1ms.
	Delay Duration `json:"delay"`
	// GRPCCode names the gRPC status code of a failed gRPC call, as the
	// gRPC spec spells it (e.g. RESOURCE_EXHAUSTED); "" means UNAVAILABLE.
	GRPCCode string `json:"grpc_code,omitempty"`
	Health
}

func init() { register(Fail{Status: 503, Delay: Duration(time.Millisecond)}) }

// Mode returns "fail".
func (Fail) Mode() string { return "fail" }

// Validate checks status and delay.
func (f Fail) Validate() error {
	if err := validateFailure(f.Status, f.Delay, f.GRPCCode); err != nil {
		return err
	}
	return f.Health.validate()
}

// Plan fails the request.
func (f Fail) Plan(time.Duration, *rand.Rand) Action {
	return Action{Kind: ActionFail, Status: f.Status, Delay: time.Duration(f.Delay), GRPCCode: actionGRPCCode(f.GRPCCode)}
}

// validateFailure checks the status, delay and grpc_code parameters shared
// by the failing modes.
func validateFailure(status int, delay Duration, grpcCode string) error {
	if status < 400 || status > 599 {
		return fmt.Errorf("status: must be within [400,599], got %d", status)
	}
	if delay < 0 {
		return fmt.Errorf("delay: must be >= 0, got %s", delay)
	}
	if _, err := ParseGRPCCode(grpcCode); err != nil {
		return fmt.Errorf("grpc_code: %w", err)
	}
	return nil
}

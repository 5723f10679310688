package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fail answers every request with an error status after a short delay,
// without occupying a worker: a fast-failing instance.
//
// JSON: {"mode": "fail", "status": 503, "delay": "1ms"}.
// ParseFault fills omitted parameters with the defaults noted; a Go literal
// must set Status itself.
type Fail struct {
	// Status is the answered status, within [400,599]; default 503.
	Status int `json:"status"`
	// Delay is the wait before answering, >= 0; default 1ms.
	Delay Duration `json:"delay"`
	Health
}

func init() { register(Fail{Status: 503, Delay: Duration(time.Millisecond)}) }

// Mode returns "fail".
func (Fail) Mode() string { return "fail" }

// Validate checks status and delay.
func (f Fail) Validate() error {
	if err := validateFailure(f.Status, f.Delay); err != nil {
		return err
	}
	return f.Health.validate()
}

// Plan fails the request.
func (f Fail) Plan(time.Duration, *rand.Rand) Action {
	return Action{Kind: ActionFail, Status: f.Status, Delay: time.Duration(f.Delay)}
}

// validateFailure checks the status and delay parameters shared by the
// failing modes.
func validateFailure(status int, delay Duration) error {
	if status < 400 || status > 599 {
		return fmt.Errorf("status: must be within [400,599], got %d", status)
	}
	if delay < 0 {
		return fmt.Errorf("delay: must be >= 0, got %s", delay)
	}
	return nil
}

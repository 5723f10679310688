package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// SlowClose delays the closing of every connection the instance closes by
// Delay: the socket stays open, and its client sees no FIN (or RST) until
// then. A client reading an answer framed by its Content-Length does not
// wait for it; one reading to the end of the connection (an HTTP/1.0-style
// answer, a cut answer, a connection the server closes while the client
// waits for its next answer) does, and the instance holds the connection
// meanwhile. Closing the instance closes the connections still waiting at
// once. The delay is the one in force when the close is made.
//
// JSON: {"mode": "slow-close", "delay": "1s"}.
type SlowClose struct {
	// Delay is how long each close waits; default 1s.
	Delay Duration `json:"delay"`
	Health
}

func init() { register(SlowClose{Delay: Duration(time.Second)}) }

// Mode returns "slow-close".
func (SlowClose) Mode() string { return "slow-close" }

// Validate checks delay and health_status.
func (f SlowClose) Validate() error {
	if f.Delay <= 0 {
		return fmt.Errorf("delay: must be > 0, got %s", f.Delay)
	}
	return f.Health.validate()
}

// Plan serves the request as without the fault.
func (SlowClose) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

func (f SlowClose) connEffects() connEffects {
	return connEffects{closeDelay: time.Duration(f.Delay)}
}

func (SlowClose) unmodeled() string {
	return "slow-close acts on the closing of connections, which the simulator does not model"
}

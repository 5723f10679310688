package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Bandwidth limits every connection of the instance to Rate bytes a
// second in each direction: requests trickle in and answers trickle out,
// as over a saturated link. It acts on the bytes of the connection, so an
// HTTP/2 (h2c, gRPC) connection's streams share the rate, and a small
// answer is barely slowed while a large one (instances.response_bytes, or
// a sidecar's upstream's) takes its size over Rate. Bytes move in steps of
// a twentieth of a second's worth (one byte at a time below 20 bytes a
// second); a limit set, changed or cleared applies from the next step, to
// transfers under way too.
//
// JSON: {"mode": "bandwidth", "rate": "64KiB"} (bytes a second).
type Bandwidth struct {
	// Rate is bytes a second each way, per connection; default 64KiB.
	Rate ByteSize `json:"rate"`
	Health
}

func init() { register(Bandwidth{Rate: 64 << 10}) }

// Mode returns "bandwidth".
func (Bandwidth) Mode() string { return "bandwidth" }

// Validate checks rate and health_status.
func (f Bandwidth) Validate() error {
	if f.Rate <= 0 {
		return fmt.Errorf("rate: must be > 0 bytes a second, got %d", int64(f.Rate))
	}
	return f.Health.validate()
}

// Plan serves the request as without the fault: the rate acts on its
// connection.
func (Bandwidth) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

func (f Bandwidth) connEffects() connEffects { return connEffects{rate: float64(f.Rate)} }

func (Bandwidth) unmodeled() string {
	return "bandwidth acts on the bytes of each connection, which the simulator does not model"
}

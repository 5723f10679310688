package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Latency delays traffic without holding a worker, as a longer network
// path does: with Per "request" every request waits Value before the
// instance takes it up; with Per "connection" each connection accepted
// while the fault is in force waits Value at its first read (a slow
// handshake, as TLS or a far-away peer gives), and the requests on it
// then go at full speed. That first read takes the first request's first
// bytes before the wait (the instance sniffs them to tell a control
// connection, which is exempt: see ConnFault); the request is served
// after it. The wait ends early when the fault is cleared, and a
// connection accepted before the fault was set does not wait. A client
// with keep-alive pays the connection's latency once; one that opens a
// connection per request pays it every time.
//
// JSON: {"mode": "latency", "per": "request", "value": "100ms"}.
type Latency struct {
	// Per is "request" (default) or "connection".
	Per string `json:"per"`
	// Value is the delay; default 100ms.
	Value Duration `json:"value"`
	Health
}

// Latency scopes.
const (
	PerRequest    = "request"
	PerConnection = "connection"
)

func init() { register(Latency{Per: PerRequest, Value: Duration(100 * time.Millisecond)}) }

// Mode returns "latency".
func (Latency) Mode() string { return "latency" }

// Validate checks per, value and health_status.
func (f Latency) Validate() error {
	switch f.Per {
	case PerRequest, PerConnection:
	default:
		return fmt.Errorf("per: must be %q or %q, got %q", PerRequest, PerConnection, f.Per)
	}
	if f.Value <= 0 {
		return fmt.Errorf("value: must be > 0, got %s", f.Value)
	}
	return f.Health.validate()
}

// Plan serves the request, after Value per request.
func (f Latency) Plan(base time.Duration, _ *rand.Rand) Action {
	a := Action{Kind: ActionServe, Service: base}
	if f.Per == PerRequest {
		a.Latency = time.Duration(f.Value)
	}
	return a
}

func (f Latency) connEffects() connEffects {
	if f.Per == PerConnection {
		return connEffects{handshake: time.Duration(f.Value)}
	}
	return connEffects{}
}

func (f Latency) unmodeled() string {
	if f.Per == PerRequest {
		return ""
	}
	return "latency per connection delays each new connection's first bytes, and the simulator models no connections"
}

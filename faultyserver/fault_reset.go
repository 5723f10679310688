package faultyserver

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Reset ends each request without any response, abortively where the
// transport allows it, so the client sees a reset. Scope says what is
// reset: the request's stream (the default), or its whole connection.
//
// On HTTP/1.1 a connection carries one request at a time, so both close
// the connection (with an RST). On HTTP/2 (h2c) ResetStream resets the
// request's stream alone (RST_STREAM) and the connection's other streams
// go on; ResetConnection closes the TCP connection, so every stream on it
// fails — what a balancer at layer 4 sees of a crashing instance.
//
// JSON: {"mode": "reset"}, {"mode": "reset", "scope": "connection"}.
type Reset struct {
	Scope string `json:"scope,omitempty"`
	Health
}

// Reset scopes.
const (
	ResetStream     = "stream"
	ResetConnection = "connection"
)

func init() { register(Reset{}) }

// Mode returns "reset".
func (Reset) Mode() string { return "reset" }

// Validate checks scope and health_status.
func (f Reset) Validate() error {
	switch f.Scope {
	case "", ResetStream, ResetConnection:
	default:
		return fmt.Errorf("scope: must be %q or %q, got %q", ResetStream, ResetConnection, f.Scope)
	}
	return f.Health.validate()
}

// Plan resets the request's stream, or with ResetConnection its whole
// connection.
func (f Reset) Plan(time.Duration, *rand.Rand) Action {
	return Action{Kind: ActionReset, WholeConn: f.Scope == ResetConnection}
}

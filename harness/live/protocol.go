package live

import (
	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// protocolOptions are the client options of exp's protocol: with h2c,
// exp.Connections HTTP/2 connections per balancer replica and instance, or
// to a proxy under test (transport.H2C); for HTTP/1.1 without keep-alive
// (keepalive: false), a connection per request.
func protocolOptions(exp *experiments.Experiment) []transport.Option {
	if exp.Protocol == experiments.ProtocolH2C {
		return []transport.Option{transport.H2C(exp.Connections)}
	}
	if exp.NoKeepAlive {
		return []transport.Option{transport.NoKeepAlive()}
	}
	return nil
}

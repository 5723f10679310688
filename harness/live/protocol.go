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
	var opts []transport.Option
	if exp.NoKeepAlive {
		opts = append(opts, transport.NoKeepAlive())
	}
	if len(exp.Zones) > 0 {
		opts = append(opts, transport.WithZones(zonesOf(exp)))
	}
	return opts
}

// zonesOf is where exp's replicas and instances are, for the transport.
func zonesOf(exp *experiments.Experiment) transport.Zones {
	z := transport.Zones{CrossLatency: exp.CrossZoneLatency}
	for r := range max(1, exp.Replicas) {
		z.ReplicaZone = append(z.ReplicaZone, exp.ReplicaZone(r))
	}
	for id := range exp.EdgeCount() {
		z.InstanceZone = append(z.InstanceZone, exp.ZoneOf(id))
	}
	return z
}

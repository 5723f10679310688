package experiments

import "github.com/lbchaos/lbchaos/strategies"

// checkGRPC validates strategy s, named field, a gRPC strategy (grpc-go's
// own balancer): its spec, and that the experiment's load speaks gRPC —
// a grpc-go balancer picks among gRPC subchannels, so it cannot route
// HTTP/1.1 or h2c requests.
func (e *Experiment) checkGRPC(field, s string) error {
	if _, err := strategies.ParseGRPC(s); err != nil {
		return fieldErr(field, "%v", err)
	}
	if e.Protocol != ProtocolGRPC {
		return fieldErr(field, "%s is a grpc-go balancer and needs protocol: %s (the experiment's protocol is %s)", s, ProtocolGRPC, e.Protocol)
	}
	if e.Generators > 1 {
		return fieldErr(field, "%s: a grpc-go balancer runs in one process; generators (%d) apply to built-in strategies", s, e.Generators)
	}
	return nil
}

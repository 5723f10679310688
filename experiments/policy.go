package experiments

import "github.com/lbchaos/lbchaos/strategies"

// checkPolicy validates a built-in strategy's retry and hedge wrappers
// against the rest of the experiment: the timeout they work within and
// the protocol that carries their attempts.
func (e *Experiment) checkPolicy(field string, spec strategies.Spec) error {
	retry, hedge := spec.PolicyConfig()
	if retry == nil && hedge == nil {
		return nil
	}
	if e.Protocol == ProtocolGRPC {
		return fieldErr(field, "the retry and hedge wrappers send their attempts over HTTP (protocol %s or %s); under protocol %s use grpc-go's own retry policy, e.g. grpc:round_robin+retry(max_attempts=3)",
			ProtocolHTTP1, ProtocolH2C, ProtocolGRPC)
	}
	if e.Timeout <= 0 {
		return nil // the timeout's own check reports it
	}
	if retry != nil && retry.PerTryTimeout >= e.Timeout {
		return fieldErr(field, "retry: per_try_timeout %v is not shorter than the timeout (%v), the whole request's deadline across attempts; Envoy ignores such a per-try timeout: make it shorter or leave it out",
			retry.PerTryTimeout, e.Timeout)
	}
	if hedge != nil && hedge.Quantile == 0 && hedge.Delay >= e.Timeout {
		return fieldErr(field, "hedge: delay %v is not shorter than the timeout (%v): no hedge would ever be sent", hedge.Delay, e.Timeout)
	}
	return nil
}

package live

import (
	"fmt"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// checkProxyClient rejects a proxy strategy whose client the experiment
// asks for in a way this engine cannot give: h2c reaches only a proxy that
// forwards bytes (+tcp, +stream) or speaks it (lbchaos:), the configurations
// written for nginx, HAProxy and caddy at L7 take HTTP/1.1, and a
// connection-level proxy's requests are attributed by the client's
// connections, which only a single generator sees.
func checkProxyClient(exp *experiments.Experiment, name string, ps proxyspec.Spec) error {
	switch exp.Protocol {
	case "", experiments.ProtocolHTTP1:
	case experiments.ProtocolH2C:
		if !ps.ConnLevel() && ps.Kind != proxyspec.Lbchaos {
			return fmt.Errorf("strategy %s: protocol h2c: the configuration lbchaos writes for %s takes HTTP/1.1 from its clients; use protocol http1, a connection-level proxy (+tcp, +stream, which forward HTTP/2 as bytes) or an lbchaos: proxy", name, ps.Kind)
		}
	default:
		return fmt.Errorf("strategy %s: protocol %s: a proxy under test takes protocol http1, or h2c at L4 (+tcp, +stream) and through lbchaos:", name, exp.Protocol)
	}
	if ps.ConnLevel() && exp.Generators > 1 {
		return fmt.Errorf("strategy %s: generators (%d): a connection-level proxy's unanswered requests are attributed by the client connection they went out on, which only a single generator sees; use generators: 1", name, exp.Generators)
	}
	return nil
}

// proxyClientConns bounds the client's connections to a proxy under test:
// the experiment's connections when it gives them (at L4 they decide how
// the load spreads), else proxyConns.
func proxyClientConns(exp *experiments.Experiment, perInstance, instances int) int {
	if exp.Connections > 0 {
		return exp.Connections
	}
	return proxyConns(perInstance, instances)
}

// attributeConns attributes the results of a stopped connection-level
// proxy that no instance answered, by the client connection each went out
// on and the proxy's log of where that connection went, adds them to coll
// and returns the notes on the proxy.
func attributeConns(proxy *proxies.Proxy, name string, unnamed []engine.SeqOutcome, conns map[uint64]transport.ConnRef, coll *engine.Collector) []string {
	var notes []string
	cm, err := proxy.ConnAttribution()
	if err != nil {
		notes = append(notes, fmt.Sprintf("%s: the proxy's connection log could not be read (%v); %d requests without an answer stay unattributed.", name, err, len(unnamed)))
	}
	for _, u := range unnamed {
		if c, ok := conns[u.Seq]; ok {
			if id, ok := cm.Instance(c.Port, c.At); ok {
				u.Outcome.Instance = id
			}
		}
		coll.Add(u.Outcome)
	}
	return append(notes, fmt.Sprintf("%s: a real %s balancing connections, not requests, between the load generator and the backends: every request of a client connection goes to the instance the connection was given when it opened; its own health checks are not observed, and its latency includes the extra hop.", name, proxy.Kind()))
}

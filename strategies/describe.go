package strategies

import "github.com/lbchaos/lbchaos/strategies/proxyspec"

// descriptions say in one line what each base strategy, wrapper and proxy
// kind does, for a report's glossary. Every name Names and WrapperNames
// return has one (describe_test.go); the doc comment of each strategy's
// type says the rest.
var descriptions = map[string]string{
	// Base strategies.
	"biased-random":         "random pick weighted by (1 - load/max load)², load being the requests in flight: the busiest host gets nothing",
	"bounded-load":          "consistent hashing with bounded loads: a key's host unless it holds more than factor × the mean load, then the next on the ring",
	"dynamic-weights":       "smooth weighted round robin on weights recomputed every interval from what the backends report and how they answered",
	"ewma":                  "of choice_count random hosts, the lowest response-time moving average (adaptive smoothing) times requests in flight + 1",
	"fastest-response":      "the host whose last window response times average lowest",
	"key-hash":              "the request key modulo the number of hosts: almost every key moves when the host set changes",
	"least-inflight":        "the host with the fewest requests in flight, scanning every host; ties at random",
	"least-request":         "Envoy's least_request: the less loaded of choice_count random hosts (weights bias it)",
	"maglev":                "Maglev consistent hashing of the request key through a prime-sized lookup table (Envoy's maglev)",
	"p2c":                   "power of two choices: two hosts at random, the one with fewer requests in flight",
	"peak-ewma":             "Finagle's peak EWMA: the lower of two random hosts' latency moving average (peaks kept) times the requests in flight",
	"predictive-least-conn": "least in-flight requests as forecast a horizon ahead from each host's recent history",
	"random":                "a host uniformly at random; ignores load and outcomes",
	"ring-hash":             "Envoy's ring hash: consistent hashing of the request key on a ring",
	"round-robin":           "each host in turn; ignores load and outcomes",
	"server-load":           "of choice_count random hosts, the one reporting the least load of its own (a response header)",
	"weighted-random":       "a host at random in proportion to its configured weight",
	"weighted-round-robin":  "nginx's smooth weighted round robin over the configured weights",

	// Wrappers.
	"retry":       "retries a failed attempt (Envoy's retry policy: backoff with full jitter, other_host, budgets)",
	"hedge":       "sends another attempt to another host when the first is slower than a delay (p95); the first answer wins",
	"circuit":     "takes a host out for a duration once its requests in flight reach max_inflight",
	"eject":       "Envoy's outlier detection: ejects a host after consecutive failures (or a low success rate) for a time that grows with each ejection, then re-admits it",
	"health":      "passive multi-level health: a host's recent failures and latency lower the share of picks it may get",
	"healthcheck": "active health checks: a host is taken out after failed probes in a row and back after good ones",
	"pinned":      "connection-level balancing: the inner strategy picks per long-lived connection, requests follow their connection",
	"slowstart":   "Envoy's slow start: a host that joins gets a share of traffic that grows over a window",

	// Zone wrappers.
	"zone-aware":        "Envoy's zone aware routing: the client's own zone as far as its healthy hosts cover its clients' share, the rest spilled to zones with spare capacity",
	"priority-failover": "Envoy's priority levels: the client's own zone first, the other zones as the failover level, traffic moving over as the own zone's health (× overprovisioning) drops below 100%",
	"prefer-close":      "Kubernetes' trafficDistribution PreferClose: the healthy hosts of the client's own zone whenever there is one, with no balance check",

	// Proxies and grpc-go, named by their kind.
	proxyspec.Nginx:   "a real nginx in front of the instances (upstream module); its algorithm and proxy_next_upstream retries as the spec names them",
	proxyspec.HAProxy: "a real HAProxy in front of the instances; its balance algorithm and observe/check options as the spec names them",
	proxyspec.Caddy:   "a real Caddy reverse_proxy in front of the instances; its lb_policy as the spec names it",
	proxyspec.Kube:    "a Kubernetes Service: kube-proxy's rules on the node pick a ready pod per connection, blind to load and results (--backends kube; load from generator pods)",
	proxyspec.Lbchaos: "`lbchaos proxy` serving a built-in strategy as a separate hop",
	"grpc":            "grpc-go's own client-side balancer (its load-balancing policy) over gRPC connections",
}

// Describe says in one line what name does: a base strategy, a wrapper, a
// proxy kind (nginx, haproxy, caddy, lbchaos) or "grpc". It returns ""
// for a name it does not know.
func Describe(name string) string { return descriptions[name] }

// Terms returns the names in spec that Describe describes, in the order
// they appear: the base strategy and its wrappers ("least-inflight",
// "eject"), or the kind of a proxy or gRPC strategy ("nginx", "grpc").
// A spec that does not parse yields nil.
func Terms(spec string) []string {
	switch {
	case IsGRPC(spec):
		return []string{"grpc"}
	case proxyspec.IsProxy(spec):
		ps, err := proxyspec.Parse(spec)
		if err != nil {
			return nil
		}
		out := []string{ps.Kind}
		if ps.Kind == proxyspec.Lbchaos {
			out = append(out, Terms(ps.Algorithm)...)
		}
		return out
	}
	s, err := Parse(spec)
	if err != nil {
		return nil
	}
	out := []string{s.Base}
	for _, w := range s.Wrappers {
		out = append(out, w.Name)
	}
	return out
}

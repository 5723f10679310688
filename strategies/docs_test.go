package strategies

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// docs/strategies.md is generated from the registry (Names, WrapperNames and
// each one's parameters), the gRPC policies (grpcPolicies), the proxy kinds
// (proxyspec.Kinds) and the one-line descriptions of describe.go, with the
// defaults and the longer notes below. TestStrategiesDoc fails when the file
// differs from what they give, or when a strategy, wrapper, parameter or
// policy has no entry below (or an entry names one that does not exist);
// go test ./strategies -run TestStrategiesDoc -update rewrites it.

const strategiesDocPath = "../docs/strategies.md"

var updateDocs = flag.Bool("update", false, "rewrite "+strategiesDocPath+" from the registry")

// paramDefaults are each registered parameter's default as the document
// shows it, by strategy, wrapper or gRPC policy ("grpc:round_robin"), in
// the registry's order. "" shows the parameter without a default.
var paramDefaults = map[string]map[string]string{
	"least-inflight":        {"ties": "random"},
	"least-request":         {"choice_count": "2", "active_request_bias": "1.0", "full_scan": "false"},
	"peak-ewma":             {"decay": "10s", "default_rtt": "0", "failure_penalty": "0"},
	"ewma":                  {"choice_count": "2; 0 = all"},
	"fastest-response":      {"window": "10"},
	"predictive-least-conn": {"horizon": "5s", "interval": "1s", "window": "6"},
	"server-load":           {"choice_count": "2; 0 = all", "inflight": "false", "report_interval": "none; ≥ 10ms"},
	"dynamic-weights":       {"interval": "5s", "smoothing": "0.5", "max_ratio": "10"},
	"ring-hash":             {"min_ring": "1024", "max_ring": "8388608"},
	"maglev":                {"table": "65537, prime"},
	"bounded-load":          {"factor": "1.25", "min_ring": "1024"},

	"eject": {
		"consecutive": "5; 0 = off", "duration": "30s", "max": "0.1",
		"split_local": "false", "consecutive_local": "5", "interval": "10s", "max_duration": "300s", "panic": "0 = off",
		"success_rate": "true", "sr_min_hosts": "5", "sr_volume": "100", "sr_factor": "1.9",
		"failure_percentage": "false", "fp_threshold": "0.85", "fp_min_hosts": "5", "fp_volume": "50",
	},
	"slowstart": {"window": "30s", "aggression": "1.0", "min_weight": "0.1"},
	"health": {
		"window": "10s", "degraded_errors": "0.05", "critical_errors": "0.2", "unhealthy_errors": "0.5",
		"degraded_latency": "2", "critical_latency": "4", "unhealthy_latency": "8",
		"weights": "1:0.5:0.1:0", "recover": "10s", "ramp": "10s", "max_middle": "60s", "max_ejected": "0.3", "min_requests": "20",
	},
	"pinned":      {"max_age": "none"},
	"circuit":     {"max_inflight": "required", "duration": "30s"},
	"healthcheck": {"interval": "2s", "timeout": "1s", "rise": "2", "fall": "3", "path": "/healthz"},
	"retry": {
		"attempts": "3 (in all)", "on": "5xx; also gateway-error, reset, connect, timeout, joined by |", "per_try_timeout": "none",
		"backoff": "25ms", "max_backoff": "10 × backoff", "other_host": "false", "idempotent_only": "true",
		"budget": "none; e.g. 20%", "min_per_s": "10", "budget_window": "10s", "concurrency_budget": "none; e.g. 20%", "min_concurrency": "3",
	},
	"hedge": {"delay": "p95; or a duration", "max": "2 (in all)"},

	"zone-aware":        {"min_cluster_size": "6", "routing_enabled": "100, a percentage"},
	"priority-failover": {"overprovisioning": "1.4"},
	"prefer-close":      {},

	"grpc:pick_first":                 {"shuffle_address_list": "false"},
	"grpc:round_robin":                {},
	"grpc:weighted_round_robin":       {"blackout_period": "10s", "weight_expiration_period": "3m", "weight_update_period": "1s, at least 100ms", "error_utilization_penalty": "1.0"},
	"grpc:least_request_experimental": {"choice_count": "2; 2..10"},
	"grpc:ring_hash_experimental":     {"min_ring_size": "1024", "max_ring_size": "4096"},
}

// paramOrder is the order parameters are listed in where the registry's
// order is not the one a reader wants (the gRPC policies' are a map).
var paramOrder = map[string][]string{
	"grpc:weighted_round_robin":   {"blackout_period", "weight_expiration_period", "weight_update_period", "error_utilization_penalty"},
	"grpc:ring_hash_experimental": {"min_ring_size", "max_ring_size"},
}

// notes say more than describe.go's line: where a strategy comes from,
// what its parameters do, where it departs from its source. A gRPC
// policy's note is its table row's text (describe.go has one line for all
// of them).
var notes = map[string]string{
	"round-robin":           "Cycles through the hosts in id order.",
	"least-inflight":        "Fewest requests in flight from this balancer, scanning all; ties at random, or with `ties=first` to the lowest id as many simple implementations do (the scenarios' source breaks them at random).",
	"p2c":                   "Two distinct random hosts; the one with fewer in flight wins.",
	"weighted-round-robin":  "nginx's smooth weighted round robin over the instances' `weight` (5:1:1 gives A A B A C A A).",
	"weighted-random":       "Random, with probability proportional to the instances' `weight`.",
	"least-request":         "Envoy's least_request: the best of N random choices with equal weights; with unequal weights, earliest-deadline scheduling on `weight / (active + 1)^bias`.",
	"biased-random":         "Probability ∝ (1 − load/max_load)², falling back to uniform.",
	"peak-ewma":             "Finagle/Linkerd: a per-host cost peaks on a slow answer and decays with time constant `decay`; two choices on cost × (pending + 1); `failure_penalty` makes a failure count as at least that slow.",
	"ewma":                  "Response-time EWMA with adaptive smoothing (α 0.1, 0.3 on anomalies, down to 0.05 when calm).",
	"fastest-response":      "The thirteen-algorithm survey's \"fastest response\": the lowest average of each host's last `window` response times, scanning all; ties at random. Where the survey is silent: requests in flight do not count (so the fastest host takes every pick until its answers slow down, the survey's trap), a host without an answer yet counts as 0 and is tried first, failures and timeouts count their latency, and nothing decays: a shunned host gets traffic again only when every other looks slower.",
	"predictive-least-conn": "Least in-flight, forecast `horizon` ahead: each host's mean in-flight count per `interval`, a least-squares line through the last `window` of them, forecast max(0, now + slope × horizon); ties at random. Departs from the survey's predictive least connections: this balancer's own counts, a straight line rather than a learned or ARIMA model, clamped at 0.",
	"server-load":           "Two choices on the load each backend reports in `X-Lbchaos-Load` (its requests in flight), optionally plus this balancer's own (`inflight`). With `report_interval` the load is not read from responses (their header is ignored) but from a shared signal: every interval the engine polls each instance's control API stats (in service + queued, the header's number; the simulator its model) and hands every replica the same snapshot, as a registry, metrics pipeline or polled endpoint would. It departs from Netflix's and the herding article's balancers in being only that snapshot (no error rate, no smoothing). One poller per strategy run, so not with `generators` > 1 or through `lbchaos:` proxies.",
	"dynamic-weights":       "Smooth weighted round robin on weights recomputed every `interval` from what the backends report and how they answer: goodput per request held, where the requests held are the larger of the backend's reported load (`X-Lbchaos-Load`) and this balancer's own by Little's law (Σ latency / interval); EWMA across intervals (`smoothing`); hosts without a weight get the mean; clamped to [mean/`max_ratio`, mean×`max_ratio`]. The weights settle where every instance holds the same number of requests. Departs from the thirteen-algorithm article (agents reporting CPU, memory and connections on a timer): HTTP answers carry no utilization, so the load report and latency stand in for it (instances with more workers but the same speed get no more weight until the others queue), the weights come from the reports alone (configured weights ignored), and they are recomputed lazily on the first pick or answer after each interval.",
	"ring-hash":             "Envoy's ring hash on the request key (xxHash), points per host by weight.",
	"maglev":                "A Maglev lookup table on the request key.",
	"bounded-load":          "Consistent hashing with bounded loads: a host takes at most ceil(factor × average in flight); a key whose home is full walks the ring.",
	"key-hash":              "hosts[key mod N]: the contrast case that remaps almost every key when N changes.",

	"eject":       "Envoy's outlier detection: consecutive failures eject at once, the success-rate and failure-percentage detectors at each `interval`; an ejection lasts `duration` × the number of times the host was ejected, up to `max_duration`; at most a share `max` is ejected (at least one); below `panic` healthy hosts, health is ignored. With every host ejected and no panic threshold, requests fail at once with \"no healthy upstream\" and count as errors of no instance. For a fixed ejection time, as in most published simulations, set `max_duration` equal to `duration`.",
	"slowstart":   "Envoy's slow start for hosts that join after the start: traffic factor max(min_weight, (t/window)^(1/aggression)).",
	"health":      "Multi-level health (healthy / degraded / critical / unhealthy) judged from real traffic over `window`: the error-ratio thresholds (`*_errors`) and the latency thresholds (`*_latency`, a host's mean latency over the fleet's median) set the level; a host's level worsens at once, recovers one level per `recover` and ramps back in over `ramp`; `weights` are each level's share of picks.",
	"pinned":      "Connection-level balancing on the client, as a Kubernetes Service or an L4 proxy balances an HTTP/2 or gRPC client: the replica holds `connections` connections (1 when not given), each pinned to the instance the inner strategy picks when it opens; requests go to the connections in turn. With `max_age` a connection is re-picked at its first request at that age (as grpc-go's `MaxConnectionAge` makes clients reconnect), so instances that joined can get traffic; without it never. A connection whose instance left the host set, or was ejected by a wrapper after it (`p2c+pinned+eject`), is re-picked at its next request. The inner strategy sees only the requests that open connections.",
	"retry":       "Envoy's retry policy, carried out by the client: a failed attempt matching `on` is retried after an exponential backoff with full jitter (retry k waits U[0, min(`backoff` × 2^(k-1), `max_backoff`))), up to `attempts` in all, within the experiment's `timeout` (the whole request's deadline); `per_try_timeout` ends an attempt as a timeout of its instance. `other_host=true` keeps a retry off the hosts the request already tried (Envoy's previous_hosts; lbchaos removes them from the pick rather than re-picking). Each attempt is a pick of the strategy and its outcome is reported, so `eject` and the other wrappers see every attempt. Budgets: `budget` is Finagle's RetryBudget (retries ≤ `budget` × requests + `min_per_s` × `budget_window` over the window), `concurrency_budget` Envoy's retry_budget (retries in flight ≤ max(`concurrency_budget` × attempts in flight, `min_concurrency`)); a refused retry returns the failure, and the budget's exhaustion is an event. Only idempotent methods are retried unless `idempotent_only=false`. Departs from Envoy: budgets count this balancer's requests, not a whole cluster's.",
	"hedge":       "The hedged requests of \"The Tail at Scale\": a request not answered within `delay` gets another attempt on another host, again after each further delay, up to `max` in all; the first attempt that does not fail wins and the others are cancelled (counted as cancelled at their instances, not as failures). `delay=p95` (the default) follows the 95th percentile of the last 1000 answered attempts, after 100 of them. grpc-go implements no hedging; Envoy hedges only on a per-try timeout.",
	"circuit":     "A connection-count circuit breaker (the \"round robin with a connection-count breaker\" of the thirteen-algorithm article): the pick that brings an instance to `max_inflight` requests in flight from this balancer takes it out for `duration`; re-admitted then if below the limit, else out another `duration`. Each take-out counts as an ejection (`eject` / `readmit` events). With every instance out (a burst at the start can open them all), the instances below the limit are given, timers ignored, and when none is, every instance (as a panic threshold), never \"no healthy upstream\": the trip is a load signal, not a failure. Departs from the article: counts this balancer's requests only, not the server's connections from all clients, and closes after a fixed time rather than when the connections drain.",
	"healthcheck": "Active health checks with HAProxy's defaults; kept to show that a slow or fast-failing instance passes them.",

	"zone-aware":        "Envoy's zone aware routing. Below 50% healthy hosts (panic) every host is passed on, with no zone logic. Zone logic needs the hosts in at least 2 zones, a host in the client's zone, clients in at least 2 zones and at least `min_cluster_size` healthy hosts; otherwise every healthy host is passed on. It applies to `routing_enabled` percent of the picks. With L the zones' shares of the clients and U their shares of the healthy hosts: when U ≥ L in the client's zone, all its picks stay there; otherwise a share U/L of them, and the rest go to the other zones in proportion to max(0, U − L) (L 40/40/20, U 25/50/25: the first zone's clients keep 62.5%, send 25% to the second and 12.5% to the third). Departs from Envoy: the clients' shares are given and never unhealthy, one priority, panic fixed at 50%, a client zone without hosts turns zone logic off (current Envoy spreads by residual capacity), shares in floating point rather than basis points, one inner strategy for every zone (Envoy keeps one per zone), and in panic an `eject` inside still hides its ejected hosts unless its own `panic` is set.",
	"priority-failover": "Envoy's priority levels with the client's zone as priority 0 and the others together as priority 1. A level's health is min(100, ⌊`overprovisioning` × healthy%⌋); with T = min(100, health₀ + health₁) priority 0 gets ⌊health₀ × 100 / T⌋ percent of the picks and priority 1 the rest (P0 72% healthy: 100%; 71%: 99%; 50%: 70%). When T < 100 a level below 50% healthy is in panic and gets all its hosts; both in panic share the picks by host count. Departs from Envoy: the levels come from zones, not from the control plane's priorities, and are two; no degraded hosts or weighted priority health; panic fixed at 50%; no locality balancing within a level and one inner strategy for both.",
	"prefer-close":      "Kubernetes' `trafficDistribution: PreferClose`: the healthy (ready) hosts of the client's zone when there is one, else every healthy host (and when none is healthy, every host, for the wrappers inside to decide). No balance check: one host alone in a busy zone takes all its clients' traffic, the known hazard. Departs from kube-proxy: per request rather than per connection with conntrack (put `pinned` inside for that), health is this client's own view at once rather than readiness through EndpointSlices, no serving-while-terminating fallback.",

	"grpc:pick_first":                 "Pins the first address in every replica; `shuffle_address_list` shuffles the addresses with grpc-go's own random source, which the experiment's seed does not reach.",
	"grpc:round_robin":                "Each subchannel in turn.",
	"grpc:weighted_round_robin":       "Weights from the servers' per-call ORCA reports (`enableOobLoadReport` false): qps / (utilization + penalty × eps / qps); a report without utilization is ignored.",
	"grpc:least_request_experimental": "The less loaded of `choice_count` random subchannels.",
	"grpc:ring_hash_experimental":     "Hashes the request key (`x-lbchaos-key` metadata, the experiment's `keys:`).",
}

// proxyExamples are specs of each proxy kind, as a reader would copy them;
// each must parse. docs/proxies.md says everything else about them.
var proxyExamples = map[string][]string{
	proxyspec.Nginx: {
		"nginx:round_robin", "nginx:least_conn", "nginx:random_two", "nginx:hash",
		"nginx:least_conn(max_fails=3,next_upstream=error|timeout|http_503)",
		"nginx:least_conn+stream", "nginx:file(path=upstream.conf)",
	},
	proxyspec.HAProxy: {
		"haproxy:roundrobin", "haproxy:leastconn", "haproxy:random(2)",
		"haproxy:roundrobin+check(inter=2s,fall=3,rise=2)",
		"haproxy:random(2)+observe(error_limit=10,on_error=mark-down)",
		"haproxy:leastconn+tcp", "haproxy:file(path=backend.cfg)",
	},
	proxyspec.Kube: {"kube:service"},
	proxyspec.Caddy: {
		"caddy:round_robin", "caddy:least_conn", "caddy:random", "caddy:random_choose(2)", "caddy:first", "caddy:header",
		"caddy:least_conn(fail_duration=5s,max_fails=20,unhealthy_latency=75ms)",
	},
	proxyspec.Lbchaos: {"lbchaos:p2c+eject", "lbchaos:least-inflight"},
}

const strategiesDocHead = `# Strategies

<!-- Generated from the strategies registry, strategies/describe.go and
strategies/docs_test.go: go test ./strategies -run TestStrategiesDoc -update.
Edit those, not this file. -->

An experiment file's ` + "`strategies:`" + ` and ` + "`lbchaos run --strategies`" + ` name
strategies by a spec: a base algorithm with optional wrappers, written
` + "`base(param=value,...)+wrapper(...)+...`" + `. Wrappers apply left to right
(` + "`p2c+eject+slowstart`" + `: slowstart wraps eject, which wraps p2c). Each
follows a production balancer's definition; the doc comment of its file in
` + "`strategies/`" + ` says where it departs from it. Besides the built-in
strategies, a spec can name one of grpc-go's own balancers (` + "`grpc:POLICY`" + `)
or a real proxy (` + "`nginx:`" + `, ` + "`haproxy:`" + `, ` + "`caddy:`" + `, ` + "`lbchaos:`" + `); see
[proxies.md](proxies.md).

A bad spec is rejected before anything runs, naming the strategy, wrapper
or parameter at fault.

Ejections, health levels, failed checks and instances joining are recorded
with their time in ` + "`summary.json`" + ` (` + "`events`" + `) and drawn on the health plot.
`

// zoneWrappersHead opens the section of the wrappers that need zones.
const zoneWrappersHead = `
## Zone wrappers

These wrappers route by zone. They need each instance's zone, the zone
the client sends from and how the clients spread over the zones, which
an experiment gives with ` + "`zones:`" + ` (each zone's name, its instances, in
order, and its share of the clients); a spec with one of them is
rejected without it. Each client (replica) belongs to one zone.

A zone wrapper counts a host as healthy when no ` + "`eject`" + ` or ` + "`healthcheck`" + `
inside it takes the host out, chooses the zone (or priority level) from
the healthy hosts, and passes that zone's healthy hosts to the wrappers
inside and the base strategy, which picks among them. Inside means
written before it: ` + "`p2c+eject+zone-aware`" + ` chooses a zone among the hosts
ejection leaves healthy, then p2c picks within it. Written after them
(` + "`p2c+zone-aware+eject`" + `), ejected hosts are hidden from the zone wrapper
and no longer count against a zone's health or towards panic.

These are models reproduced from the documented rules of Envoy and
Kubernetes, inside one client on one machine; each note says where they
depart from the real thing.
`

// strategiesDoc renders docs/strategies.md.
func strategiesDoc(t *testing.T) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(strategiesDocHead)

	b.WriteString("\n## Base strategies\n\n| base | parameters (default) | what it does |\n| --- | --- | --- |\n")
	for _, name := range Names() {
		row(t, &b, name, bases[name].params, name)
	}
	writeNotes(&b, Names())
	var plain, zoned []string
	for _, name := range WrapperNames() {
		if zoneWrappers[name] {
			zoned = append(zoned, name)
		} else {
			plain = append(plain, name)
		}
	}
	b.WriteString("\n## Wrappers\n\n| wrapper | parameters (default) | what it does |\n| --- | --- | --- |\n")
	for _, name := range plain {
		row(t, &b, name, wrappers[name].params, name)
	}
	writeNotes(&b, plain)
	b.WriteString(zoneWrappersHead + "\n| wrapper | parameters (default) | what it does |\n| --- | --- | --- |\n")
	for _, name := range zoned {
		row(t, &b, name, wrappers[name].params, name)
	}
	writeNotes(&b, zoned)

	b.WriteString("\n## grpc-go's own balancers\n\n" + Describe("grpc") + ". " +
		"A `grpc:POLICY(settings)` strategy runs grpc-go's policy unchanged and needs `protocol: grpc`; " +
		"its settings are the policy's service-config fields in snake case. " +
		"See [proxies.md](proxies.md#grpc-grpc-gos-own-balancers).\n\n" +
		"| strategy | settings (grpc-go's default) | what it does |\n| --- | --- | --- |\n")
	for _, policy := range GRPCPolicies() {
		key := GRPCPrefix + policy
		params := paramOrder[key]
		if params == nil {
			params = sortedKeys(grpcPolicies[policy])
		}
		if got, want := slices.Sorted(slices.Values(params)), sortedKeys(grpcPolicies[policy]); !slices.Equal(got, want) {
			t.Errorf("paramOrder[%q] lists %q, the policy takes %q", key, got, want)
		}
		if _, ok := notes[key]; !ok {
			t.Errorf("%s has no entry in notes: say what the policy does", key)
		}
		row(t, &b, key, params, "")
	}

	b.WriteString("\n## Real proxies\n\nA proxy strategy runs a real load balancer between the load and the instances, " +
		"configured for the current backends; it runs with the real engine only. " +
		"Options, attribution and the connection-level (`+tcp`, `+stream`) forms are in [proxies.md](proxies.md).\n\n" +
		"| proxy | what it is | for example |\n| --- | --- | --- |\n")
	for _, kind := range proxyspec.Kinds() {
		examples := proxyExamples[kind]
		if len(examples) == 0 {
			t.Errorf("proxyExamples has no spec of the proxy kind %q", kind)
		}
		for _, ex := range examples {
			if _, err := proxyspec.Parse(ex); err != nil {
				t.Errorf("proxyExamples: %s: %v", ex, err)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", kind, cell(Describe(kind)), codeList(examples))
	}
	for kind := range proxyExamples {
		if !slices.Contains(proxyspec.Kinds(), kind) {
			t.Errorf("proxyExamples has %q, which is no proxy kind", kind)
		}
	}
	for key := range paramDefaults {
		if !known(key) {
			t.Errorf("paramDefaults has %q, which is no strategy, wrapper or gRPC policy", key)
		}
	}
	for key := range notes {
		if !known(key) {
			t.Errorf("notes has %q, which is no strategy, wrapper or gRPC policy", key)
		}
	}
	return []byte(b.String())
}

// row writes the table row of a strategy, wrapper or gRPC policy: its
// parameters with their defaults, describe.go's line (when describe names
// one) and its note.
func row(t *testing.T, b *strings.Builder, key string, params []string, describe string) {
	t.Helper()
	defaults := paramDefaults[key]
	var ps []string
	for _, p := range params {
		def, ok := defaults[p]
		if !ok {
			t.Errorf("%s: parameter %q has no entry in paramDefaults", key, p)
		}
		if def == "" {
			ps = append(ps, "`"+p+"`")
		} else {
			ps = append(ps, fmt.Sprintf("`%s` (%s)", p, def))
		}
	}
	for p := range defaults {
		if !slices.Contains(params, p) {
			t.Errorf("paramDefaults[%q] has %q, which %s does not take", key, p, key)
		}
	}
	paramText := "—"
	if len(ps) > 0 {
		paramText = strings.Join(ps, ", ")
	}
	text := notes[key]
	if describe != "" {
		if text = Describe(describe); text == "" {
			t.Errorf("Describe(%q) is empty", describe)
		}
	}
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", key, cell(paramText), cell(text))
}

// writeNotes writes the notes of names, those that have one, as a list.
func writeNotes(b *strings.Builder, names []string) {
	b.WriteString("\n")
	for _, name := range names {
		if note, ok := notes[name]; ok {
			fmt.Fprintf(b, "- `%s`: %s\n", name, note)
		}
	}
}

// known reports whether key names a strategy, wrapper or gRPC policy.
func known(key string) bool {
	if policy, ok := strings.CutPrefix(key, GRPCPrefix); ok {
		_, ok := grpcPolicies[policy]
		return ok
	}
	_, isBase := bases[key]
	_, isWrapper := wrappers[key]
	return isBase || isWrapper
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func codeList(specs []string) string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = "`" + cell(s) + "`"
	}
	return strings.Join(out, ", ")
}

func TestStrategiesDoc(t *testing.T) {
	got := strategiesDoc(t)
	if t.Failed() {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(strategiesDocPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(strategiesDocPath)
	if err != nil {
		t.Fatalf("%v; run go test ./strategies -run TestStrategiesDoc -update", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from the registry (-file +registry); run go test ./strategies -run TestStrategiesDoc -update:\n%s", strategiesDocPath, d)
	}
}

package experiments

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Validate checks every field's range and the cross-field rules, and fills
// in the keys the requests carry (Requests.Key). It is run by Parse and
// again after command-line overrides. That an expectation names one of the
// strategies is checked by Parse only. It reports the first rule each
// check finds broken, every check's at once (errors.Join); the checks of
// the run's size go first, and when one of them fails the rest, which
// rely on the size, are not run.
func (e *Experiment) Validate() error {
	var errs []error
	// Checks that rely on a valid duration and instance count are not
	// run without them: every fault would be "out of range" of nothing.
	sized := e.Duration > 0 && e.Instances.validateSize() == nil
	for _, c := range []struct {
		check func() error
		sized bool
	}{
		{e.validateLoad, false},
		{e.Instances.validateSize, false},
		{e.validateHasStrategies, false},
		{e.validateProfile, false},
		{e.Instances.validateExternal, false},
		{e.Instances.validateApp, false},
		{e.validateLifecycle, false},
		{e.Instances.validateEach, true},
		{e.validateBalancers, true},
		{e.validateKeys, false},
		{e.validateFaults, true},
		{e.validateStrategies, false},
		{e.validateTiers, false},
		{e.validateZones, false},
		{e.validateExpectations, false},
		{e.validateAborts, true},
	} {
		if c.sized && !sized {
			continue
		}
		if err := c.check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateLoad checks the run's timing and its constant rate: duration,
// arrival, rate (without a rate profile), timeout and slow_threshold.
func (e *Experiment) validateLoad() error {
	var errs []error
	if e.Duration <= 0 {
		errs = append(errs, fieldErr("duration", "must be > 0, got %v", e.Duration))
	}
	if e.Arrival != ArrivalPoisson && e.Arrival != ArrivalConstant {
		errs = append(errs, fieldErr("arrival", "must be %q or %q, got %q", ArrivalPoisson, ArrivalConstant, e.Arrival))
	}
	switch {
	case e.Profile == nil && !(e.Rate > 0):
		errs = append(errs, fieldErr("rate", "must be > 0 requests per second, got %v", e.Rate))
	case e.Profile == nil && e.Rate > MaxRate:
		errs = append(errs, fieldErr("rate", "%v requests per second is beyond what one machine can generate; the limit is 1000000", e.Rate))
	}
	if e.Timeout <= 0 {
		errs = append(errs, fieldErr("timeout", "must be > 0, got %v", e.Timeout))
	}
	if e.SlowThreshold <= 0 {
		errs = append(errs, fieldErr("slow_threshold", "must be > 0, got %v", e.SlowThreshold))
	}
	return errors.Join(errs...)
}

// validateSize checks instances.count, and the default workers and
// queue_limit.
func (in Instances) validateSize() error {
	switch {
	case in.Count < 1:
		return fieldErr("instances.count", "must be >= 1, got %d", in.Count)
	case in.Count > 1000:
		return fieldErr("instances.count", "must be <= 1000, got %d", in.Count)
	case in.Workers < 0:
		return fieldErr("instances.workers", "must be >= 0 (0 = unlimited), got %d", in.Workers)
	case in.QueueLimit < 0:
		return fieldErr("instances.queue_limit", "must be >= 0 (0 = unbounded), got %d", in.QueueLimit)
	}
	return nil
}

// validateHasStrategies checks that the experiment lists a strategy.
func (e *Experiment) validateHasStrategies() error {
	if len(e.Strategies) == 0 {
		return fieldErr("strategies", "needs at least one strategy (known: %s)", strings.Join(strategies.Names(), ", "))
	}
	return nil
}

// validateProfile checks the rate profile, if any, against the duration.
func (e *Experiment) validateProfile() error {
	if e.Profile == nil {
		return nil
	}
	return e.Profile.validate(e.Duration)
}

// validateEach checks the default service time where an instance uses
// it, each instance's settings, and that one instance is there from the
// start.
func (in Instances) validateEach() error {
	// Without a service time the instances can only be foreign ones
	// (Modeled); whoever starts or simulates instances requires one.
	modeled := in.Service != (faultyserver.Dist{})
	usesDefault := modeled && (len(in.Each) == 0 || slices.ContainsFunc(in.Each, func(x Instance) bool { return x.Service == in.Service }))
	if usesDefault {
		if err := in.Service.Validate(); err != nil {
			return fieldErr("instances.service", "%v", err)
		}
	}
	if len(in.Each) != 0 && len(in.Each) != in.Count {
		return fieldErr("instances", "%d instance settings for %d instances", len(in.Each), in.Count)
	}
	for id, x := range in.Each {
		name := fmt.Sprintf("instances (instance %d)", id)
		switch {
		case x.Workers < 0:
			return fieldErr(name+".workers", "must be >= 0 (0 = unlimited), got %d", x.Workers)
		case !(x.Weight > 0) || math.IsInf(x.Weight, 0):
			return fieldErr(name+".weight", "must be a number > 0, got %v", x.Weight)
		case x.JoinAt < 0:
			return fieldErr(name+".join_at", "must be >= 0, got %v", x.JoinAt)
		case x.Warmup < 0:
			return fieldErr(name+".warmup.duration", "must be >= 0, got %v", x.Warmup)
		case x.Warmup > 0 && !(x.WarmupFactor > 0):
			return fieldErr(name+".warmup.factor", "must be > 0, got %v", x.WarmupFactor)
		}
		if x.Service == in.Service || in.Foreign() && x.Service == (faultyserver.Dist{}) {
			continue
		}
		if err := x.Service.Validate(); err != nil {
			return fieldErr(name+".service", "%v", err)
		}
	}
	if len(in.Joining()) == in.Count {
		return fieldErr("instances", "every instance has a join_at after the start; at least one must be there from the start")
	}
	return nil
}

// validateBalancers checks how the load is sent: replicas, generators,
// protocol and connections.
func (e *Experiment) validateBalancers() error {
	if e.Replicas < 1 || e.Replicas > 64 {
		return fieldErr("replicas", "must be within [1, 64], got %d", e.Replicas)
	}
	if e.Generators < 1 || e.Generators > MaxGenerators {
		return fieldErr("generators", "must be within [1, %d], got %d", MaxGenerators, e.Generators)
	}
	if e.Generators*e.Replicas > 64 {
		return fieldErr("generators", "%d generators of %d replicas are %d balancers; at most 64", e.Generators, e.Replicas, e.Generators*e.Replicas)
	}
	if !slices.Contains(Protocols, e.Protocol) {
		return fieldErr("protocol", "want one of %s, got %q", strings.Join(Protocols, ", "), e.Protocol)
	}
	if e.Connections < 0 || e.Connections > MaxConnections {
		return fieldErr("connections", "must be within [0, %d], got %d", MaxConnections, e.Connections)
	}
	if e.Connections == 0 && e.Protocol != ProtocolHTTP1 {
		return fieldErr("connections", "protocol %s multiplexes requests over connections: give at least 1", e.Protocol)
	}
	return nil
}

// validateKeys checks keys and requests, at most one of which gives the
// requests their keys, and fills in the keys requests carry.
func (e *Experiment) validateKeys() error {
	if e.Keys != nil {
		if err := e.Keys.validate(); err != nil {
			return err
		}
	}
	if e.Requests == nil {
		return nil
	}
	if e.Keys != nil && e.Requests.Key != nil {
		return fieldErr("requests.key", "and keys both give requests a key; keep one: keys draws them, requests.key reads them from the requests")
	}
	return e.Requests.validate()
}

// validateFaults checks each fault's instance and window, and that no
// two faults of one instance overlap.
func (e *Experiment) validateFaults() error {
	for i, f := range e.Faults {
		field, name := f.where(i)
		switch {
		case f.Instance < 0 || f.Instance >= e.Instances.Count:
			return fieldErr(field, "%d is out of range: instances are 0..%d", f.Instance, e.Instances.Count-1)
		case f.At < 0:
			return fieldErr(name+".at", "must be >= 0, got %v", f.At)
		case f.At >= e.Duration:
			return fieldErr(name+".at", "%v is not before the end of the run (duration %v)", f.At, e.Duration)
		case f.Until != 0 && f.Until <= f.At:
			return fieldErr(name+".until", "%v must be after at (%v)", f.Until, f.At)
		}
		for j := range i {
			g := e.Faults[j]
			if g.Instance == f.Instance && overlaps(g, f) {
				_, other := g.where(j)
				if f.Warmup {
					return fieldErr(name, "the warm-up of instance %d overlaps %s; one instance has one fault at a time", f.Instance, other)
				}
				return fieldErr(name, "overlaps %s on instance %d; one instance has one fault at a time", other, f.Instance)
			}
		}
	}
	return nil
}

// validateStrategies parses each strategy (proxy, gRPC or client-side),
// checks a proxy's file, and refuses a strategy listed twice.
func (e *Experiment) validateStrategies() error {
	seen := map[string]int{}
	var errs []error
	for i, s := range e.Strategies {
		name := fmt.Sprintf("strategies[%d]", i)
		check := e.checkStrategy
		if strings.Contains(s, Hop) {
			check = e.checkHops
		}
		if err := check(name, s); err != nil {
			errs = append(errs, err)
		}
		if j, dup := seen[s]; dup {
			errs = append(errs, fieldErr(name, "%q is listed twice (also strategies[%d])", s, j))
		}
		seen[s] = i
	}
	return errors.Join(errs...)
}

// checkStrategy parses one strategy spec of the file, named name in
// messages, and for an unknown one says which known one it is closest to.
func (e *Experiment) checkStrategy(name, s string) error {
	switch {
	case proxyspec.IsProxy(s):
		ps, err := proxyspec.Parse(s)
		if err != nil {
			return fieldErr(name, "%v", err)
		}
		if ps.Algorithm == proxyspec.File {
			return e.checkProxyFile(name, s, ps)
		}
	case strategies.IsGRPC(s):
		return e.checkGRPC(name, s)
	default:
		spec, err := strategies.Parse(s)
		if err == nil {
			return e.checkPolicy(name, spec)
		}
		base, _, _ := strings.Cut(s, "+")
		base, _, _ = strings.Cut(base, "(")
		if !slices.Contains(strategies.Names(), base) {
			if hint := Suggest(base, strategies.Names()); hint != "" {
				return fieldErr(name, "unknown strategy %q; did you mean %q? (lbchaos list strategies shows them all)", base, hint)
			}
		}
		return fieldErr(name, "%v", err)
	}
	return nil
}

// validateExpectations checks key_metric and each expectation's metric
// and condition.
func (e *Experiment) validateExpectations() error {
	if !slices.Contains(reports.KeyMetrics(), e.KeyMetric) {
		return fieldErr("key_metric", "unknown metric %q (one of %s)", e.KeyMetric, strings.Join(reports.KeyMetrics(), ", "))
	}
	for i, x := range e.Expect {
		name := fmt.Sprintf("expect[%d]", i)
		switch {
		case !slices.Contains(reports.Metrics(), x.Metric):
			return fieldErr(name, "unknown metric %q (known: %s)", x.Metric, strings.Join(reports.Metrics(), ", "))
		case !slices.Contains(ops, x.Op) || math.IsNaN(x.Value) || math.IsInf(x.Value, 0):
			return fieldErr(name+"."+x.Metric, `want "OP NUMBER" like %q, got %q`, conditionExample(x.Metric), x.Op+" "+strconv.FormatFloat(x.Value, 'g', -1, 64))
		}
		if _, _, err := ParseThreshold(x.Metric, x.String()[len(x.Metric)+1:]); err != nil {
			return fieldErr(name+"."+x.Metric, "%v", err)
		}
	}
	return nil
}

// validateExternal checks the external instances' URLs and health path.
func (in Instances) validateExternal() error {
	if len(in.External) == 0 {
		return nil
	}
	if len(in.External) != in.Count {
		return fieldErr("instances.external", "lists %d instances for instances.count %d; they must agree", len(in.External), in.Count)
	}
	for i, x := range in.External {
		name := fmt.Sprintf("instances.external[%d]", i)
		if err := CheckBaseURL(x.URL); err != nil {
			return fieldErr(name+".url", "%v", err)
		}
		if x.Sidecar != "" {
			if err := CheckBaseURL(x.Sidecar); err != nil {
				return fieldErr(name+".sidecar", "%v", err)
			}
		}
	}
	if !strings.HasPrefix(in.HealthPath, "/") {
		return fieldErr("instances.health", "must be a path starting with /, got %q", in.HealthPath)
	}
	return nil
}

// validateApp checks instances.app: an image, a port, a variable name
// for port_env, a health path, environment variable names.
func (in Instances) validateApp() error {
	a := in.App
	if a == nil {
		return nil
	}
	switch {
	case len(in.External) > 0:
		return fieldErr("instances.app", "and instances.external (or --backend) both say where the instances come from; keep one: app starts your image, external points at instances that already run")
	case strings.TrimSpace(a.Image) == "":
		return fieldErr("instances.app.image", "is required: a local image such as myteam/api:1.4 (lbchaos never pulls)")
	case a.Port < 1 || a.Port > 65535:
		return fieldErr("instances.app.port", "is required: the service's HTTP port, 1..65535, got %d", a.Port)
	case a.PortEnv != "" && !envName(a.PortEnv):
		return fieldErr("instances.app.port_env", "%q is not an environment variable name (letters, digits, _; not starting with a digit)", a.PortEnv)
	case !strings.HasPrefix(a.Health, "/") || strings.HasPrefix(a.Health, "//"):
		return fieldErr("instances.app.health", "must be a path starting with /, got %q", a.Health)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		switch {
		case !envName(k):
			return fieldErr("instances.app.env", "%q is not an environment variable name (letters, digits, _; not starting with a digit)", k)
		case k == a.PortEnv:
			return fieldErr("instances.app.env."+k, "is port_env, whose value lbchaos assigns to each instance; leave it out of env")
		}
	}
	return nil
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// CheckBaseURL reports whether s is an instance's base URL: http or https,
// a host, and no query or fragment.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return errors.New("is required: the instance's base URL, e.g. http://10.0.0.5:8080")
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("%q is not an http:// or https:// URL with a host, e.g. http://10.0.0.5:8080", s)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q has a query or fragment; give the instance's base URL", s)
	}
	return nil
}

// validate checks the key distribution and the hot key's share and window.
func (k *KeySpec) validate() error {
	switch k.Dist {
	case KeysUniform, KeysSequence:
		if k.S != 0 {
			return fieldErr("keys.s", "applies to dist zipf only")
		}
	case KeysZipf:
		if !(k.S > 0) || math.IsInf(k.S, 0) {
			return fieldErr("keys.s", "is required for zipf: the exponent, a number > 0 (e.g. 1.1)")
		}
	case "":
		return fieldErr("keys.dist", "is required: %s, %s or %s", KeysUniform, KeysZipf, KeysSequence)
	default:
		return fieldErr("keys.dist", "must be %s, %s or %s, got %q", KeysUniform, KeysZipf, KeysSequence, k.Dist)
	}
	switch {
	case k.N < 1 || k.N > 10_000_000:
		return fieldErr("keys.n", "the number of distinct keys must be within [1, 10000000], got %d", k.N)
	case k.Dist == KeysZipf && k.N > 1_000_000:
		return fieldErr("keys.n", "zipf draws from a table of every key's probability; at most 1000000 keys, got %d", k.N)
	case k.HotShare < 0 || k.HotShare >= 1 || math.IsNaN(k.HotShare):
		return fieldErr("keys.hot.share", "must be in (0, 1), got %v", k.HotShare)
	case k.HotFrom < 0:
		return fieldErr("keys.hot.from", "must be >= 0, got %v", k.HotFrom)
	case k.HotUntil != 0 && k.HotUntil <= k.HotFrom:
		return fieldErr("keys.hot.until", "%v must be after from (%v)", k.HotUntil, k.HotFrom)
	}
	return nil
}

// overlaps reports whether two faults' windows [At, Until) intersect; an
// Until of 0 runs to the end of the run.
func overlaps(a, b Fault) bool {
	end := func(f Fault) time.Duration {
		if f.Until == 0 {
			return time.Duration(1<<63 - 1)
		}
		return f.Until
	}
	return a.At < end(b) && b.At < end(a)
}

// MaxConnections bounds connections per balancer replica.
const MaxConnections = 1000

// MaxGenerators bounds generators: load generator processes.
const MaxGenerators = 64

// fieldErr is the error of every check, the field's path first:
// "field: why". Parse prefixes the source file the same way.
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

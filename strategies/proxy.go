package strategies

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A proxy strategy is a real load balancer run as a process between the
// load generator and the backends, named "kind:algorithm" with optional
// parameters and options:
//
//	nginx:least_conn(max_fails=3,fail_timeout=10s,next_upstream=error|timeout|http_503)
//	haproxy:random(2)+observe(error_limit=10,on_error=mark-down)+check(inter=2s)
//	lbchaos:p2c+eject(consecutive=5)
//	nginx:file(path=upstream.conf)
//	haproxy:file(path=backend.cfg)
//
// The harness writes its configuration, starts it, and measures it like a
// built-in strategy. ProxySpec is the parsed form; the algorithms and
// options below are what each proxy offers (see lb-semantics for their
// defaults).
type ProxySpec struct {
	Kind      string            // ProxyNginx, ProxyHAProxy or ProxyLbchaos
	Algorithm string            // e.g. "least_conn"; for lbchaos a built-in spec
	Params    map[string]string // the algorithm's parameters; nil when none
	Options   []WrapperSpec     // haproxy: observe, check, tcp; nginx: stream
}

// Proxy kinds.
const (
	ProxyNginx   = "nginx"
	ProxyHAProxy = "haproxy"
	// ProxyLbchaos is `lbchaos proxy` serving a built-in strategy as a hop.
	ProxyLbchaos = "lbchaos"
	// ProxyCaddy is Caddy's reverse_proxy (see proxy_caddy.go).
	ProxyCaddy = "caddy"
)

// proxyKinds are the kinds a proxy spec may name.
var proxyKinds = []string{ProxyNginx, ProxyHAProxy, ProxyLbchaos, ProxyCaddy}

// NginxNextUpstream are the conditions nginx's proxy_next_upstream takes
// that a proxy spec may list.
var NginxNextUpstream = []string{"error", "timeout", "invalid_header", "http_500", "http_502", "http_503", "http_504", "http_403", "http_404", "http_429", "non_idempotent", "off"}

// proxyAlgorithms are each proxy's algorithms and their parameters.
var proxyAlgorithms = map[string]map[string][]string{
	ProxyNginx: {
		"round_robin": {"max_fails", "fail_timeout", "next_upstream"},
		"least_conn":  {"max_fails", "fail_timeout", "next_upstream"},
		"random_two":  {"max_fails", "fail_timeout", "next_upstream"}, // random two least_conn
		"hash":        {"max_fails", "fail_timeout", "next_upstream"}, // hash $http_x_lbchaos_key consistent
		ProxyFile:     {"path"},
	},
	ProxyHAProxy: {
		"roundrobin": nil,
		"leastconn":  nil,
		"random":     {"draws"},
		ProxyFile:    {"path"},
	},
	ProxyCaddy: caddyAlgorithms,
}

// proxyOptions are the options (written as wrappers) each proxy takes.
var proxyOptions = map[string]map[string][]string{
	ProxyNginx: {ModeStream: nil},
	ProxyHAProxy: {
		"observe": {"error_limit", "on_error"},
		"check":   {"inter", "fall", "rise"},
		ModeTCP:   nil,
	},
	ProxyCaddy: {},
}

// ProxyFile is the algorithm of a proxy whose balancing section is the
// team's own file: nginx:file(path=upstream.conf) holds the body of an
// upstream block, haproxy:file(path=backend.cfg) that of a backend section.
// A relative path is resolved by the experiment (see
// experiments.Experiment.ProxyFiles); the harness writes the servers into
// the file's placeholder.
const ProxyFile = "file"

// ProxyPathForbidden are the characters a file's path cannot contain: the
// spec grammar separates parameters with ",", encloses them in "(" ")",
// joins options with "+" and splits key from value at "=".
const ProxyPathForbidden = ",()+="

// HAProxyOnError are the values of HAProxy's on-error.
var HAProxyOnError = []string{"fastinter", "fail-check", "sudden-death", "mark-down"}

// IsProxy reports whether spec names a proxy strategy ("kind:...").
func IsProxy(spec string) bool {
	kind, _, ok := strings.Cut(strings.TrimSpace(spec), ":")
	return ok && slices.Contains(proxyKinds, kind)
}

var positional = regexp.MustCompile(`^random\(\s*(\d+)\s*\)`)

// ParseProxy parses and validates a proxy strategy spec. The error names
// the proxy, algorithm, option or parameter at fault and why.
func ParseProxy(spec string) (ProxySpec, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || !slices.Contains(proxyKinds, kind) {
		return ProxySpec{}, fmt.Errorf("malformed proxy spec %q: want nginx:ALGORITHM, haproxy:ALGORITHM, caddy:POLICY or lbchaos:STRATEGY", spec)
	}
	rest = strings.TrimSpace(rest)
	if kind == ProxyLbchaos {
		s, err := Parse(rest)
		if err != nil {
			return ProxySpec{}, fmt.Errorf("lbchaos: %w", err)
		}
		return ProxySpec{Kind: kind, Algorithm: s.String()}, nil
	}
	// HAProxy writes its draws positionally: random(2).
	if kind == ProxyHAProxy {
		rest = positional.ReplaceAllString(rest, "random(draws=$1)")
	}
	// Caddy writes its choices positionally too: random_choose 2.
	if kind == ProxyCaddy {
		rest = caddyChoose(rest)
	}
	segs, err := splitSpec(rest)
	if err != nil {
		if ferr := checkFilePath(kind, rest); ferr != nil {
			return ProxySpec{}, ferr
		}
		return ProxySpec{}, fmt.Errorf("%s: %w", kind, err)
	}
	algos := proxyAlgorithms[kind]
	algo := segs[0]
	params, known := algos[algo.name]
	if !known {
		return ProxySpec{}, fmt.Errorf("%s: unknown algorithm %q (known: %s)", kind, algo.name, strings.Join(sortedKeys(algos), ", "))
	}
	if err := checkKeys(algo, params); err != nil {
		return ProxySpec{}, fmt.Errorf("%s: %w", kind, err)
	}
	if err := validateProxyParams(algo.name, algo.params); err != nil {
		return ProxySpec{}, fmt.Errorf("%s:%s: %w", kind, algo.name, err)
	}
	ps := ProxySpec{Kind: kind, Algorithm: algo.name, Params: algo.params}
	if algo.name == ProxyFile {
		if _, ok := algo.params["path"]; !ok {
			return ProxySpec{}, fmt.Errorf("%s:file: path is required: the file with your own %s section, e.g. %s:file(path=%s)", kind, fileSection[kind], kind, fileExample[kind])
		}
		if len(segs) > 1 {
			if isMode(segs[1].name) {
				return ProxySpec{}, fmt.Errorf("%s:file: +%s: a file spec's section is an HTTP-level one (an http upstream, a mode http backend); connection-level balancing takes a built-in algorithm, e.g. %s", kind, segs[1].name, l4Example[kind])
			}
			return ProxySpec{}, fmt.Errorf("%s:file: takes no options (%q): write them in the file", kind, "+"+segs[1].name)
		}
	}
	opts := proxyOptions[kind]
	for _, o := range segs[1:] {
		allowed, known := opts[o.name]
		if !known {
			if len(opts) == 0 {
				return ProxySpec{}, fmt.Errorf("%s: unknown option %q (%s takes its options as parameters of the algorithm)", kind, o.name, kind)
			}
			if kind == ProxyNginx {
				return ProxySpec{}, fmt.Errorf("%s: unknown option %q (%s takes its options as parameters of the algorithm); its one modifier is +%s", kind, o.name, kind, ModeStream)
			}
			return ProxySpec{}, fmt.Errorf("%s: unknown option %q (known: %s)", kind, o.name, strings.Join(sortedKeys(opts), ", "))
		}
		if slices.ContainsFunc(ps.Options, func(w WrapperSpec) bool { return w.Name == o.name }) {
			return ProxySpec{}, fmt.Errorf("%s: option %q given twice", kind, o.name)
		}
		if err := checkKeys(o, allowed); err != nil {
			return ProxySpec{}, fmt.Errorf("%s: %w", kind, err)
		}
		if err := validateProxyParams(o.name, o.params); err != nil {
			return ProxySpec{}, fmt.Errorf("%s+%s: %w", kind, o.name, err)
		}
		ps.Options = append(ps.Options, WrapperSpec{Name: o.name, Params: o.params})
	}
	if err := checkConnLevel(ps); err != nil {
		return ProxySpec{}, err
	}
	if kind == ProxyCaddy {
		if err := checkCaddy(ps); err != nil {
			return ProxySpec{}, err
		}
	}
	return ps, nil
}

// Option returns the named option's parameters and whether it was given.
func (p ProxySpec) Option(name string) (map[string]string, bool) {
	for _, o := range p.Options {
		if o.Name == name {
			if o.Params == nil {
				return map[string]string{}, true
			}
			return o.Params, true
		}
	}
	return nil, false
}

var (
	fileSection = map[string]string{ProxyNginx: "upstream", ProxyHAProxy: "backend"}
	fileExample = map[string]string{ProxyNginx: "upstream.conf", ProxyHAProxy: "backend.cfg"}
	// filePath is the path parameter of a file spec, to the spec's last ")"
	// (or its end), before the grammar splits it.
	filePath = regexp.MustCompile(`^file\s*\(\s*path\s*=(.*?)\)?\s*$`)
)

// checkFilePath explains a file spec the grammar could not split: when its
// path holds a character of ProxyPathForbidden, the error says so rather
// than what the grammar made of it.
func checkFilePath(kind, rest string) error {
	m := filePath.FindStringSubmatch(rest)
	if m == nil {
		return nil
	}
	path := strings.TrimSpace(m[1])
	if i := strings.IndexAny(path, ProxyPathForbidden); i >= 0 {
		return fmt.Errorf("%s:file: path %q contains %q, which a strategy spec cannot carry (it cannot hold any of , ( ) + =): rename the file or link it under a plain name", kind, path, path[i:i+1])
	}
	return nil
}

func validateProxyParams(name string, params map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch k {
		case "max_fails", "error_limit", "fall", "rise":
			least := 1
			if k == "max_fails" {
				least = 0 // 0 turns nginx's passive health off
			}
			if _, err := intParam(params, k, 0, least); err != nil {
				return err
			}
		case "draws":
			if _, err := intParam(params, k, 2, 1); err != nil {
				return err
			}
		case "fail_timeout":
			// nginx reads a server's fail_timeout in whole seconds.
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d%time.Second != 0 {
				return fmt.Errorf("%s: want a whole number of seconds > 0 like \"10s\", got %q", k, v)
			}
		case "inter":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d%time.Millisecond != 0 {
				return fmt.Errorf("%s: want a whole number of milliseconds > 0 like \"10s\", got %q", k, v)
			}
		case "next_upstream":
			for _, c := range strings.Split(v, "|") {
				if !slices.Contains(NginxNextUpstream, c) {
					return fmt.Errorf("next_upstream: %q is not a proxy_next_upstream condition (want some of %s, joined by \"|\")", c, strings.Join(NginxNextUpstream, ", "))
				}
			}
		case "path":
			// Of ProxyPathForbidden only "+" passes the grammar (inside
			// the parentheses); that the file exists is the experiment's
			// to check.
			if strings.Contains(v, "+") {
				return fmt.Errorf("path %q contains \"+\", which a strategy spec cannot carry (it cannot hold any of , ( ) + =): rename the file or link it under a plain name", v)
			}
		case "fail_duration", "unhealthy_latency", "unhealthy_status", "unhealthy_request_count", "choose":
			if err := validateCaddyParam(k, v); err != nil {
				return err
			}
		case "on_error":
			if !slices.Contains(HAProxyOnError, v) {
				return fmt.Errorf("on_error: want one of %s, got %q", strings.Join(HAProxyOnError, ", "), v)
			}
		default:
			return fmt.Errorf("%s: parameter %q is not validated", name, k)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// ProxyInt returns the integer parameter key of params, or def; ParseProxy
// has validated it.
func ProxyInt(params map[string]string, key string, def int) int {
	if v, ok := params[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

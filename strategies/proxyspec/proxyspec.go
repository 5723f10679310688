package proxyspec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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
// built-in strategy. Spec is the parsed form; the algorithms and options
// below are what each proxy offers (see lb-semantics for their defaults).
type Spec struct {
	Kind      string            // Nginx, HAProxy, Caddy or Lbchaos
	Algorithm string            // e.g. "least_conn"; for lbchaos a built-in spec
	Params    map[string]string // the algorithm's parameters; nil when none
	Options   []Segment         // haproxy: observe, check, tcp; nginx: stream
}

// Proxy kinds.
const (
	Nginx   = "nginx"
	HAProxy = "haproxy"
	// Lbchaos is `lbchaos proxy` serving a built-in strategy as a hop.
	Lbchaos = "lbchaos"
	// Caddy is Caddy's reverse_proxy (see caddy.go).
	Caddy = "caddy"
	// Kube is a Kubernetes Service: kube:service, the rules kube-proxy
	// writes on the node, reached from generator pods in the cluster.
	Kube = "kube"
)

// Service is the one spec of kind Kube: the Service's ClusterIP, balanced
// by kube-proxy (random per connection in iptables and nftables mode).
const Service = Kube + ":service"

// IsService reports whether spec is kube:service.
func IsService(spec string) bool { return strings.TrimSpace(spec) == Service }

// kinds are the kinds a proxy spec may name.
var kinds = []string{Nginx, HAProxy, Lbchaos, Caddy, Kube}

// Kinds returns the kinds a proxy spec may name.
func Kinds() []string { return slices.Clone(kinds) }

// NginxNextUpstream are the conditions nginx's proxy_next_upstream takes
// that a proxy spec may list.
var NginxNextUpstream = []string{"error", "timeout", "invalid_header", "http_500", "http_502", "http_503", "http_504", "http_403", "http_404", "http_429", "non_idempotent", "off"}

// algorithms are each proxy's algorithms and their parameters.
var algorithms = map[string]map[string][]string{
	Nginx: {
		"round_robin": nginxParams,
		"least_conn":  nginxParams,
		"random_two":  nginxParams, // random two least_conn
		"hash":        nginxParams, // hash $http_x_lbchaos_key consistent
		File:          {"path"},
	},
	HAProxy: {
		"roundrobin": haproxyRetry,
		"leastconn":  haproxyRetry,
		"random":     append([]string{"draws"}, haproxyRetry...),
		File:         {"path"},
	},
	Caddy: caddyAlgorithms,
	Kube:  {"service": nil},
}

// nginxParams are the parameters of nginx's algorithms: passive health
// and retries (retries.go).
var nginxParams = append([]string{"max_fails", "fail_timeout", "next_upstream"}, nginxRetry...)

// options are the options (written as wrappers) each proxy takes.
var options = map[string]map[string][]string{
	Nginx: {ModeStream: nil},
	HAProxy: {
		"observe": {"error_limit", "on_error"},
		"check":   {"inter", "fall", "rise"},
		ModeTCP:   nil,
	},
	Caddy: {},
	Kube:  {},
}

// File is the algorithm of a proxy whose balancing section is the team's
// own file: nginx:file(path=upstream.conf) holds the body of an upstream
// block, haproxy:file(path=backend.cfg) that of a backend section. A
// relative path is resolved by the experiment (see
// experiments.Experiment.ProxyFiles); the harness writes the servers into
// the file's placeholder.
const File = "file"

// PathForbidden are the characters a file's path cannot contain: the spec
// grammar separates parameters with ",", encloses them in "(" ")", joins
// options with "+" and splits key from value at "=".
const PathForbidden = ",()+="

// HAProxyOnError are the values of HAProxy's on-error.
var HAProxyOnError = []string{"fastinter", "fail-check", "sudden-death", "mark-down"}

// IsProxy reports whether spec names a proxy strategy ("kind:...").
func IsProxy(spec string) bool {
	kind, _, ok := strings.Cut(strings.TrimSpace(spec), ":")
	return ok && slices.Contains(kinds, kind)
}

var positional = regexp.MustCompile(`^random\(\s*(\d+)\s*\)`)

// Parse parses and validates a proxy strategy spec; the strategy of an
// lbchaos spec is validated by the parser RegisterBuiltin registered. The
// error names the proxy, algorithm, option or parameter at fault and why.
func Parse(spec string) (Spec, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || !slices.Contains(kinds, kind) {
		return Spec{}, fmt.Errorf("malformed proxy spec %q: want nginx:ALGORITHM, haproxy:ALGORITHM, caddy:POLICY, lbchaos:STRATEGY or kube:service", spec)
	}
	rest = strings.TrimSpace(rest)
	if kind == Lbchaos {
		return parseLbchaos(rest)
	}
	// HAProxy writes its draws positionally: random(2).
	if kind == HAProxy {
		rest = positional.ReplaceAllString(rest, "random(draws=$1)")
	}
	// Caddy writes its choices positionally too: random_choose 2.
	if kind == Caddy {
		rest = caddyChoose(rest)
	}
	segs, err := Split(rest)
	if err != nil {
		if ferr := checkFilePath(kind, rest); ferr != nil {
			return Spec{}, ferr
		}
		return Spec{}, fmt.Errorf("%s: %w", kind, err)
	}
	algos := algorithms[kind]
	algo := segs[0]
	params, known := algos[algo.Name]
	if !known {
		return Spec{}, fmt.Errorf("%s: unknown algorithm %q (known: %s)", kind, algo.Name, strings.Join(slices.Sorted(maps.Keys(algos)), ", "))
	}
	if err := algo.CheckKeys(params); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", kind, err)
	}
	if err := validateParams(algo.Name, algo.Params); err != nil {
		return Spec{}, fmt.Errorf("%s:%s: %w", kind, algo.Name, err)
	}
	ps := Spec{Kind: kind, Algorithm: algo.Name, Params: algo.Params}
	if algo.Name == File {
		if _, ok := algo.Params["path"]; !ok {
			return Spec{}, fmt.Errorf("%s:file: path is required: the file with your own %s section, e.g. %s:file(path=%s)", kind, fileSection[kind], kind, fileExample[kind])
		}
		if len(segs) > 1 {
			if isMode(segs[1].Name) {
				return Spec{}, fmt.Errorf("%s:file: +%s: a file spec's section is an HTTP-level one (an http upstream, a mode http backend); connection-level balancing takes a built-in algorithm, e.g. %s", kind, segs[1].Name, l4Example[kind])
			}
			return Spec{}, fmt.Errorf("%s:file: takes no options (%q): write them in the file", kind, "+"+segs[1].Name)
		}
	}
	opts := options[kind]
	for _, o := range segs[1:] {
		allowed, known := opts[o.Name]
		if !known {
			if len(opts) == 0 {
				return Spec{}, fmt.Errorf("%s: unknown option %q (%s takes its options as parameters of the algorithm)", kind, o.Name, kind)
			}
			if kind == Nginx {
				return Spec{}, fmt.Errorf("%s: unknown option %q (%s takes its options as parameters of the algorithm); its one modifier is +%s", kind, o.Name, kind, ModeStream)
			}
			return Spec{}, fmt.Errorf("%s: unknown option %q (known: %s)", kind, o.Name, strings.Join(slices.Sorted(maps.Keys(opts)), ", "))
		}
		if _, given := ps.Option(o.Name); given {
			return Spec{}, fmt.Errorf("%s: option %q given twice", kind, o.Name)
		}
		if err := o.CheckKeys(allowed); err != nil {
			return Spec{}, fmt.Errorf("%s: %w", kind, err)
		}
		if err := validateParams(o.Name, o.Params); err != nil {
			return Spec{}, fmt.Errorf("%s+%s: %w", kind, o.Name, err)
		}
		ps.Options = append(ps.Options, o)
	}
	if err := checkConnLevel(ps); err != nil {
		return Spec{}, err
	}
	if err := checkRetries(ps); err != nil {
		return Spec{}, err
	}
	if kind == Caddy {
		if err := checkCaddy(ps); err != nil {
			return Spec{}, err
		}
	}
	return ps, nil
}

// Option returns the named option's parameters and whether it was given.
func (p Spec) Option(name string) (map[string]string, bool) {
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
	fileSection = map[string]string{Nginx: "upstream", HAProxy: "backend"}
	fileExample = map[string]string{Nginx: "upstream.conf", HAProxy: "backend.cfg"}
	// filePath is the path parameter of a file spec, to the spec's last ")"
	// (or its end), before the grammar splits it.
	filePath = regexp.MustCompile(`^file\s*\(\s*path\s*=(.*?)\)?\s*$`)
)

// checkFilePath explains a file spec the grammar could not split: when its
// path holds a character of PathForbidden, the error says so rather than
// what the grammar made of it.
func checkFilePath(kind, rest string) error {
	m := filePath.FindStringSubmatch(rest)
	if m == nil {
		return nil
	}
	path := strings.TrimSpace(m[1])
	if i := strings.IndexAny(path, PathForbidden); i >= 0 {
		return fmt.Errorf("%s:file: path %q contains %q, which a strategy spec cannot carry (it cannot hold any of , ( ) + =): rename the file or link it under a plain name", kind, path, path[i:i+1])
	}
	return nil
}

func validateParams(name string, params map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch k {
		case "max_fails", "error_limit", "fall", "rise":
			least := 1
			if k == "max_fails" {
				least = 0 // 0 turns nginx's passive health off
			}
			if _, err := IntParam(params, k, 0, least); err != nil {
				return err
			}
		case "draws":
			if _, err := IntParam(params, k, 2, 1); err != nil {
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
			// Of PathForbidden only "+" passes the grammar (inside the
			// parentheses); that the file exists is the experiment's to
			// check.
			if strings.Contains(v, "+") {
				return fmt.Errorf("path %q contains \"+\", which a strategy spec cannot carry (it cannot hold any of , ( ) + =): rename the file or link it under a plain name", v)
			}
		case "fail_duration", "unhealthy_latency", "unhealthy_status", "unhealthy_request_count", "choose":
			if err := validateCaddyParam(k, v); err != nil {
				return err
			}
		case "tries", "next_upstream_timeout", "retries", "retry_on", "redispatch", "lb_retries", "lb_try_duration", "lb_try_interval":
			if err := validateRetryParam(k, v); err != nil {
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

// Algorithms returns the algorithms proxy kind offers, sorted (File
// among them for nginx and HAProxy); nil for lbchaos, whose algorithm is
// any built-in strategy, and for an unknown kind.
func Algorithms(kind string) []string {
	return slices.Sorted(maps.Keys(algorithms[kind]))
}

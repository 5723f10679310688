package proxyspec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Caddy's reverse_proxy as a proxy strategy, "caddy:POLICY(params)": one of
// its load-balancing policies with its passive health checks, named as in
// its configuration (caddy 2.6, modules/caddyhttp/reverseproxy):
//
//	caddy:least_conn(fail_duration=30s,max_fails=1,unhealthy_latency=250ms)
//	caddy:random_choose(2)(unhealthy_status=5xx)
//
// Passive health checks are on when fail_duration is given: a request
// counts as a failure when the upstream cannot be reached, when it answers
// with one of unhealthy_status, or when it takes longer than
// unhealthy_latency to answer; an upstream with max_fails failures within
// fail_duration is not chosen until they expire, and one with
// unhealthy_request_count requests in flight is not chosen either. The
// others need fail_duration; the retry parameters (lb_retries, ...; see
// retries.go) do not.
var caddyAlgorithms = map[string][]string{
	"random":        caddyParams,
	"random_choose": append([]string{"choose"}, caddyParams...),
	"round_robin":   caddyParams,
	"least_conn":    caddyParams,
	"first":         caddyParams,
	// header hashes X-Lbchaos-Key (the experiment's request key).
	"header": caddyParams,
}

var caddyPassive = []string{"fail_duration", "max_fails", "unhealthy_status", "unhealthy_latency", "unhealthy_request_count"}

// caddyParams are the parameters of every policy: passive health checks
// and retries (retries.go).
var caddyParams = append(slices.Clone(caddyPassive), caddyRetry...)

// caddyPositional is random_choose's count written as caddy writes it,
// alone or before the other parameters: random_choose(2),
// random_choose(2,fail_duration=30s), random_choose(2)(fail_duration=30s).
var caddyPositional = regexp.MustCompile(`^random_choose\(\s*(\d+)\s*(\)\s*\(|,|\))`)

// caddyChoose rewrites random_choose's positional count as its parameter.
func caddyChoose(rest string) string {
	m := caddyPositional.FindStringSubmatch(rest)
	if m == nil {
		return rest
	}
	sep := m[2]
	if sep != ")" {
		sep = ","
	}
	return "random_choose(choose=" + m[1] + sep + rest[len(m[0]):]
}

// validateCaddyParam checks one of caddy's parameters.
func validateCaddyParam(k, v string) error {
	switch k {
	case "fail_duration", "unhealthy_latency":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: want a duration > 0 like \"250ms\", got %q", k, v)
		}
	case "unhealthy_request_count", "choose":
		if _, err := IntParam(map[string]string{k: v}, k, 0, 1); err != nil {
			return err
		}
	case "unhealthy_status":
		if _, err := CaddyStatuses(v); err != nil {
			return err
		}
	}
	return nil
}

// CaddyStatuses parses unhealthy_status: codes joined by "|", each a
// status (503) or a class (5xx), as caddy's JSON takes them (5 is any
// 5xx).
func CaddyStatuses(v string) ([]int, error) {
	var out []int
	for _, c := range strings.Split(v, "|") {
		if len(c) == 3 && strings.HasSuffix(c, "xx") && c[0] >= '1' && c[0] <= '5' {
			out = append(out, int(c[0]-'0'))
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 100 || n > 599 {
			return nil, fmt.Errorf("unhealthy_status: %q is not a status (want codes like 503 or classes like 5xx, joined by \"|\")", c)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkCaddy checks what depends on more than one parameter: caddy's
// passive health checks are on only with fail_duration > 0 (its docs:
// "to minimally enable passive health checks, specify ... fail_duration
// > 0"), so the other settings would be silently ignored without it.
func checkCaddy(ps Spec) error {
	name := ps.Kind + ":" + ps.Algorithm
	if v, ok := ps.Params["max_fails"]; ok && v == "0" {
		return fmt.Errorf("%s: max_fails: want an integer >= 1 (caddy counts failures only with fail_duration; leave fail_duration out to turn passive health checks off), got %q", name, v)
	}
	if _, ok := ps.Params["fail_duration"]; !ok {
		for _, k := range []string{"max_fails", "unhealthy_status", "unhealthy_latency", "unhealthy_request_count"} {
			if _, set := ps.Params[k]; set {
				return fmt.Errorf("%s: %s needs fail_duration: caddy remembers a failure for fail_duration and counts none without it (e.g. fail_duration=30s)", name, k)
			}
		}
	}
	return nil
}

package proxies

import (
	"fmt"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// nginxRetries is the directives of an nginx spec's tries and
// next_upstream_timeout (proxy_next_upstream_tries,
// proxy_next_upstream_timeout), a line each with indent before it; ""
// when it gives neither, leaving nginx's defaults (0: unbounded).
func nginxRetries(ps proxyspec.Spec, indent string) string {
	var b strings.Builder
	if _, ok := ps.Params["tries"]; ok {
		fmt.Fprintf(&b, "%sproxy_next_upstream_tries %d;\n", indent, proxyspec.Int(ps.Params, "tries", 0))
	}
	if v, ok := ps.Params["next_upstream_timeout"]; ok {
		fmt.Fprintf(&b, "%sproxy_next_upstream_timeout %s;\n", indent, nginxDuration(v))
	}
	return b.String()
}

// haproxyRetries is the backend lines of a haproxy spec's retries,
// retry_on and redispatch (retries, retry-on, option redispatch); ""
// when it gives none, leaving HAProxy's defaults (3 retries on
// conn-failure, no redispatch).
func haproxyRetries(ps proxyspec.Spec) string {
	var b strings.Builder
	if _, ok := ps.Params["retries"]; ok {
		fmt.Fprintf(&b, "    retries %d\n", proxyspec.Int(ps.Params, "retries", 3))
	}
	if v, ok := ps.Params["retry_on"]; ok {
		fmt.Fprintf(&b, "    retry-on %s\n", strings.ReplaceAll(v, "|", " "))
	}
	if v, ok := ps.Params["redispatch"]; ok {
		switch n, _ := proxyspec.HAProxyRedispatch(v); n {
		case 0:
			b.WriteString("    no option redispatch\n")
		case -1:
			b.WriteString("    option redispatch\n")
		default:
			fmt.Fprintf(&b, "    option redispatch %d\n", n)
		}
	}
	return b.String()
}

// caddyRetries sets a caddy spec's lb_retries, lb_try_duration and
// lb_try_interval in reverse_proxy's load_balancing lb (retries,
// try_duration, try_interval).
func caddyRetries(lb map[string]any, params map[string]string) {
	if _, ok := params["lb_retries"]; ok {
		lb["retries"] = proxyspec.Int(params, "lb_retries", 0)
	}
	for key, name := range map[string]string{"lb_try_duration": "try_duration", "lb_try_interval": "try_interval"} {
		if v, ok := params[key]; ok {
			if d, err := time.ParseDuration(v); err == nil {
				lb[name] = d.String()
			}
		}
	}
}

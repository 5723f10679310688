package proxyspec

import (
	"fmt"
	"slices"
	"strings"
)

// Connection-level (L4) modifiers of a proxy spec: the proxy balances TCP
// connections and forwards their bytes, never reading a request.
//
//	haproxy:roundrobin+tcp       HAProxy "mode tcp"
//	nginx:least_conn+stream      nginx's stream module (libnginx-mod-stream)
//
// Every request of a client connection reaches the instance that
// connection was given when it opened, so the client's number of
// connections decides how the load spreads.
const (
	ModeTCP    = "tcp"
	ModeStream = "stream"
)

var l4Example = map[string]string{Nginx: "nginx:least_conn+stream", HAProxy: "haproxy:leastconn+tcp"}

func isMode(name string) bool { return name == ModeTCP || name == ModeStream }

// ConnLevel reports whether p balances connections (+tcp, +stream) rather
// than requests.
func (p Spec) ConnLevel() bool {
	return slices.ContainsFunc(p.Options, func(o Segment) bool { return isMode(o.Name) })
}

// l4NextUpstream are the next_upstream conditions that nginx's stream
// module has a meaning for: a connection to the upstream that failed or
// timed out (its proxy_next_upstream on), or none (off).
var l4NextUpstream = []string{"error", "timeout", "off"}

// checkConnLevel rejects what a connection-level proxy cannot do: anything
// that reads HTTP requests or responses.
func checkConnLevel(ps Spec) error {
	if !ps.ConnLevel() {
		return nil
	}
	name := ps.Kind + ":" + ps.Algorithm
	switch ps.Kind {
	case Nginx:
		if ps.Algorithm == "hash" {
			return fmt.Errorf("%s+%s: hash hashes the request header X-Lbchaos-Key, which nginx's stream module never reads (it forwards bytes); use round_robin, least_conn or random_two", name, ModeStream)
		}
		if v, ok := ps.Params["next_upstream"]; ok {
			conds := strings.Split(v, "|")
			for _, c := range conds {
				if !slices.Contains(l4NextUpstream, c) {
					return fmt.Errorf("%s+%s: next_upstream: %q is an HTTP condition, and nginx's stream module sees no HTTP requests or responses; at L4 it retries only a connection to the upstream that failed: use error|timeout (proxy_next_upstream on) or off", name, ModeStream, c)
				}
			}
			if slices.Contains(conds, "off") && len(conds) > 1 {
				return fmt.Errorf("%s+%s: next_upstream: \"off\" cannot be combined with other conditions, got %q", name, ModeStream, v)
			}
		}
	case HAProxy:
		if _, ok := ps.Option("observe"); ok {
			return fmt.Errorf("%s+%s: +observe is HAProxy's observe layer7, which judges servers by their HTTP responses; mode tcp does not see them (+check runs TCP connect checks at L4)", name, ModeTCP)
		}
	}
	return nil
}

// NginxStreamNextUpstream is next_upstream (validated by Parse for
// +stream) as the stream module's proxy_next_upstream: "on" or "off".
func NginxStreamNextUpstream(params map[string]string) string {
	if params["next_upstream"] == "off" {
		return "off"
	}
	return "on"
}

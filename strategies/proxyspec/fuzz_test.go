package proxyspec_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// FuzzParse feeds proxy strategy specs to Parse. An accepted spec must come
// back equal from its canonical form; a rejected one must get an error that
// names the spec or its proxy.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"haproxy:random(2)", "haproxy:leastconn+observe(error_limit=5,on_error=mark-down)+check(inter=1s)",
		"haproxy:roundrobin+tcp", "nginx:least_conn+stream", "nginx:random_two",
		"nginx:file(path=upstream.conf)", "haproxy:file(path=a,b.cfg)",
		"caddy:least_conn", "caddy:random_choose 2",
		"lbchaos:p2c+eject(consecutive=5)", "lbchaos:", "nope:p2c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := proxyspec.Parse(spec)
		if err != nil {
			msg := err.Error()
			kind, _, _ := strings.Cut(strings.TrimSpace(spec), ":")
			// "haproxy:" for the proxy or its algorithm, "haproxy+observe:" for an option.
			if !strings.HasPrefix(msg, kind+":") && !strings.HasPrefix(msg, kind+"+") && !strings.HasPrefix(msg, "malformed proxy spec ") {
				t.Fatalf("Parse(%q): error %q names neither the spec nor its proxy", spec, msg)
			}
			return
		}
		canon := p.Kind + ":" + p.Algorithm
		if p.Kind != proxyspec.Lbchaos {
			canon = p.Kind + ":" + proxyspec.Segment{Name: p.Algorithm, Params: p.Params}.String()
		}
		for _, o := range p.Options {
			canon += "+" + o.String()
		}
		again, err := proxyspec.Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) accepted it as %q, which does not parse: %v", spec, canon, err)
		}
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("Parse(%q) = %#v, but its canonical form %q parses to %#v", spec, p, canon, again)
		}
	})
}

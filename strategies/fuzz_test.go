package strategies

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds strategy specs to the parser the experiment loader picks
// for them (Parse, ParseProxy or ParseGRPC). An accepted spec must come back
// equal from its canonical form; a rejected one must get an error that says
// which spec, strategy, proxy or parameter is at fault.
func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		f.Add(name)
		f.Add(name + "+eject(consecutive=5,duration=5s)")
	}
	for _, name := range WrapperNames() {
		f.Add("p2c+" + name)
	}
	for _, p := range GRPCPolicies() {
		f.Add(GRPCPrefix + p)
	}
	for _, s := range []string{
		"p2c+eject(consecutive=0,success_rate=false,failure_percentage=true,fp_threshold=0.2)",
		"p2c+eject(consecutive=5,duration=30s,max=1,panic=0.5,success_rate=false)",
		" least-inflight ( ties = first ) + eject ( consecutive = 5 ) ",
		"round-robin+circuit(max_inflight=16,duration=5s)",
		"predictive-least-conn(horizon=5s,interval=500ms)",
		"server-load(report_interval=1s,choice_count=0)",
		"p2c(a=1,a=2)", "p2c(", "p2c((a=1))", "+eject", "p2c+", "eject+p2c",
		"grpc:pick_first(shuffle_address_list=true)",
		"grpc:weighted_round_robin(error_utilization_penalty=0)",
		"grpc:ring_hash_experimental(min_ring_size=10,max_ring_size=5)",
		"grpc:round_robin+eject",
		"haproxy:random(2)", "haproxy:leastconn+observe(error_limit=5,on_error=mark-down)+check(inter=1s)",
		"haproxy:roundrobin+tcp", "nginx:least_conn+stream", "nginx:random_two",
		"nginx:file(path=upstream.conf)", "haproxy:file(path=a,b.cfg)",
		"caddy:least_conn", "caddy:random_choose 2",
		"lbchaos:p2c+eject(consecutive=5)", "lbchaos:", "nope:p2c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		switch {
		case IsProxy(spec):
			checkProxySpec(t, spec)
		case IsGRPC(spec):
			checkGRPCSpec(t, spec)
		default:
			checkSpec(t, spec)
		}
	})
}

func checkSpec(t *testing.T, spec string) {
	s, err := Parse(spec)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "malformed spec ") && !strings.HasPrefix(msg, "unknown ") &&
			!strings.HasPrefix(msg, "wrapper ") && !namesSegment(msg, spec) {
			t.Fatalf("Parse(%q): error %q names neither the spec nor a strategy, wrapper or parameter of it", spec, msg)
		}
		return
	}
	canon := s.String()
	again, err := Parse(canon)
	if err != nil {
		t.Fatalf("Parse(%q) accepted it as %q, which does not parse: %v", spec, canon, err)
	}
	if !reflect.DeepEqual(again, s) {
		t.Fatalf("Parse(%q) = %#v, but its canonical form %q parses to %#v", spec, s, canon, again)
	}
	if again.String() != canon {
		t.Fatalf("canonical form of %q is not stable: %q, then %q", spec, canon, again.String())
	}
	if _, err := compile(canon); err != nil {
		t.Fatalf("compile(%q) after Parse accepted it: %v", canon, err)
	}
}

// namesSegment reports whether msg starts with "NAME:" for a name that
// appears in spec.
func namesSegment(msg, spec string) bool {
	name, _, ok := strings.Cut(msg, ":")
	return ok && name != "" && strings.Contains(spec, name)
}

func checkGRPCSpec(t *testing.T, spec string) {
	s, err := ParseGRPC(spec)
	if err != nil {
		if msg := err.Error(); !strings.Contains(msg, spec) && !strings.Contains(msg, strings.TrimSpace(spec)) {
			t.Fatalf("ParseGRPC(%q): error %q does not name the spec", spec, msg)
		}
		return
	}
	canon := s.String()
	again, err := ParseGRPC(canon)
	if err != nil {
		t.Fatalf("ParseGRPC(%q) accepted it as %q, which does not parse: %v", spec, canon, err)
	}
	if !reflect.DeepEqual(again, s) {
		t.Fatalf("ParseGRPC(%q) = %#v, but its canonical form %q parses to %#v", spec, s, canon, again)
	}
	if cfg := s.LBConfig("x-key"); !utf8.Valid(cfg) || len(cfg) == 0 {
		t.Fatalf("ParseGRPC(%q): LBConfig is not JSON text: %q", spec, cfg)
	}
}

func checkProxySpec(t *testing.T, spec string) {
	p, err := ParseProxy(spec)
	if err != nil {
		msg := err.Error()
		kind, _, _ := strings.Cut(strings.TrimSpace(spec), ":")
		// "haproxy:" for the proxy or its algorithm, "haproxy+observe:" for an option.
		if !strings.HasPrefix(msg, kind+":") && !strings.HasPrefix(msg, kind+"+") && !strings.HasPrefix(msg, "malformed proxy spec ") {
			t.Fatalf("ParseProxy(%q): error %q names neither the spec nor its proxy", spec, msg)
		}
		return
	}
	var b strings.Builder
	b.WriteString(p.Kind + ":")
	if p.Kind == ProxyLbchaos {
		b.WriteString(p.Algorithm)
	} else {
		writeSegment(&b, p.Algorithm, p.Params)
	}
	for _, o := range p.Options {
		b.WriteByte('+')
		writeSegment(&b, o.Name, o.Params)
	}
	canon := b.String()
	again, err := ParseProxy(canon)
	if err != nil {
		t.Fatalf("ParseProxy(%q) accepted it as %q, which does not parse: %v", spec, canon, err)
	}
	if !reflect.DeepEqual(again, p) {
		t.Fatalf("ParseProxy(%q) = %#v, but its canonical form %q parses to %#v", spec, p, canon, again)
	}
}

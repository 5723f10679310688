package strategies

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// FuzzParse feeds strategy specs to the parser the experiment loader picks
// for them (Parse or ParseGRPC; a proxy spec's is proxyspec.Parse, fuzzed
// there). An accepted spec must come back equal from its canonical form; a
// rejected one must get an error that says which spec, strategy or
// parameter is at fault.
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
		"nope:p2c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		switch {
		case proxyspec.IsProxy(spec):
			// proxyspec's FuzzParse checks them.
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

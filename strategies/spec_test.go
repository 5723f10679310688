package strategies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want Spec
	}{
		{"bare", "round-robin", Spec{Base: "round-robin"}},
		{"each base", "least-inflight", Spec{Base: "least-inflight"}},
		{"empty parentheses", "p2c()", Spec{Base: "p2c"}},
		{"wrapper with defaults", "least-inflight+eject", Spec{
			Base:     "least-inflight",
			Wrappers: []WrapperSpec{{Name: "eject"}},
		}},
		{"wrapper with parameters", "least-inflight+eject(consecutive=5,duration=5s)", Spec{
			Base:     "least-inflight",
			Wrappers: []WrapperSpec{{Name: "eject", Params: map[string]string{"consecutive": "5", "duration": "5s"}}},
		}},
		{"blanks around tokens", "  p2c \t+ eject ( max = 0.5 , duration=1m30s )  ", Spec{
			Base:     "p2c",
			Wrappers: []WrapperSpec{{Name: "eject", Params: map[string]string{"max": "0.5", "duration": "1m30s"}}},
		}},
		{"every eject parameter", "random+eject(consecutive=1,duration=100ms,max=1)", Spec{
			Base:     "random",
			Wrappers: []WrapperSpec{{Name: "eject", Params: map[string]string{"consecutive": "1", "duration": "100ms", "max": "1"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.spec)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.spec, diff)
			}
			again, err := Parse(got.String())
			if err != nil {
				t.Fatalf("Parse(%q) of String(): %v", got.String(), err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("String() %q does not parse back (-want +got):\n%s", got.String(), diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"empty", "", `malformed spec "": empty`},
		{"blank", "  ", `malformed spec "  ": empty`},
		{"unknown strategy", "least-conn", `unknown strategy "least-conn" (known: biased-random, bounded-load, dynamic-weights, ewma, fastest-response, key-hash, least-inflight, least-request, maglev, p2c, peak-ewma, predictive-least-conn, random, ring-hash, round-robin, server-load, weighted-random, weighted-round-robin)`},
		{"case matters", "P2C", `unknown strategy "P2C" (known: biased-random, bounded-load, dynamic-weights, ewma, fastest-response, key-hash, least-inflight, least-request, maglev, p2c, peak-ewma, predictive-least-conn, random, ring-hash, round-robin, server-load, weighted-random, weighted-round-robin)`},
		{"wrapper alone", "eject(consecutive=3)", `unknown strategy "eject" (known: biased-random, bounded-load, dynamic-weights, ewma, fastest-response, key-hash, least-inflight, least-request, maglev, p2c, peak-ewma, predictive-least-conn, random, ring-hash, round-robin, server-load, weighted-random, weighted-round-robin); "eject" is a wrapper, write it after a strategy as "+eject"`},
		{"unknown wrapper", "p2c+slow-start", `unknown wrapper "slow-start" (known: circuit, eject, health, healthcheck, hedge, pinned, prefer-close, priority-failover, retry, slowstart, zone-aware)`},
		{"base as wrapper", "p2c+random", `unknown wrapper "random" (known: circuit, eject, health, healthcheck, hedge, pinned, prefer-close, priority-failover, retry, slowstart, zone-aware)`},
		{"wrapper twice", "p2c+eject+eject", `wrapper "eject" given twice`},
		{"unknown parameter", "p2c+eject(consecutve=3)", `eject: unknown parameter "consecutve" (allowed: consecutive, duration, max, split_local, consecutive_local, interval, max_duration, panic, success_rate, sr_min_hosts, sr_volume, sr_factor, failure_percentage, fp_threshold, fp_min_hosts, fp_volume)`},
		{"parameter of a base without any", "round-robin(start=1)", `round-robin: unknown parameter "start" (round-robin takes no parameters)`},
		{"bad duration", "least-inflight+eject(duration=x)", `eject: duration: want a duration like "5s", got "x"`},
		{"duration without unit", "p2c+eject(duration=5)", `eject: duration: want a duration like "5s", got "5"`},
		{"zero duration", "p2c+eject(duration=0s)", `eject: duration: want a duration > 0, got "0s"`},
		{"negative duration", "p2c+eject(duration=-1s)", `eject: duration: want a duration > 0, got "-1s"`},
		{"negative consecutive", "p2c+eject(consecutive=-1)", `eject: consecutive: want an integer >= 0, got "-1"`},
		{"fractional consecutive", "p2c+eject(consecutive=2.5)", `eject: consecutive: want an integer >= 0, got "2.5"`},
		{"max above one", "p2c+eject(max=1.5)", `eject: max: want a number in (0, 1], got "1.5"`},
		{"max zero", "p2c+eject(max=0)", `eject: max: want a number in (0, 1], got "0"`},
		{"max percent", "p2c+eject(max=10%)", `eject: max: want a number in (0, 1], got "10%"`},
		{"max NaN", "p2c+eject(max=NaN)", `eject: max: want a number in (0, 1], got "NaN"`},
		{"duplicate parameter", "p2c+eject(duration=5s,duration=6s)", `eject: duplicate parameter "duration"`},
		{"unclosed parenthesis", "p2c+eject(duration=5s", `malformed spec "p2c+eject(duration=5s": unclosed "(" after "eject"`},
		{"nested parenthesis", "p2c+eject(duration=(5s))", `malformed spec "p2c+eject(duration=(5s))": nested "(" in parameters of "eject"`},
		{"stray closing parenthesis", "p2c)", `malformed spec "p2c)": unexpected ")" after "p2c"`},
		{"text after parameters", "p2c+eject(max=1)x", `malformed spec "p2c+eject(max=1)x": unexpected "x" after "eject"`},
		{"two names", "p2c eject", `malformed spec "p2c eject": unexpected "e" after "p2c"`},
		{"trailing plus", "p2c+", `malformed spec "p2c+": missing wrapper name after "+"`},
		{"double plus", "p2c++eject", `malformed spec "p2c++eject": missing wrapper name after "+"`},
		{"leading plus", "+eject", `malformed spec "+eject": want a strategy name, got "+"`},
		{"parameters without a name", "(max=1)", `malformed spec "(max=1)": want a strategy name, got "("`},
		{"parameter without value", "p2c+eject(max=)", `malformed spec "p2c+eject(max=)": parameter "max=" of "eject": want key=value`},
		{"parameter without key", "p2c+eject(=1)", `malformed spec "p2c+eject(=1)": parameter "=1" of "eject": want key=value`},
		{"parameter without equals", "p2c+eject(max)", `malformed spec "p2c+eject(max)": parameter "max" of "eject": want key=value`},
		{"empty parameter", "p2c+eject(max=1,)", `malformed spec "p2c+eject(max=1,)": parameter "" of "eject": want key=value`},
		{"two equals", "p2c+eject(max=1=2)", `malformed spec "p2c+eject(max=1=2)": parameter "max=1=2" of "eject": want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %s", tt.spec, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.spec, err, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	want := []string{"biased-random", "bounded-load", "dynamic-weights", "ewma", "fastest-response", "key-hash", "least-inflight", "least-request", "maglev", "p2c",
		"peak-ewma", "predictive-least-conn", "random", "ring-hash", "round-robin", "server-load", "weighted-random", "weighted-round-robin"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"circuit", "eject", "health", "healthcheck", "hedge", "pinned", "prefer-close", "priority-failover", "retry", "slowstart", "zone-aware"}, WrapperNames()); diff != "" {
		t.Errorf("WrapperNames() (-want +got):\n%s", diff)
	}
}

func TestSpecString(t *testing.T) {
	s, err := Parse(" p2c + eject( max=0.5 ,consecutive=3 )")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "p2c+eject(consecutive=3,max=0.5)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

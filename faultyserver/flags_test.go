package faultyserver

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDistFlag(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "fixed:10ms", want: "fixed 10ms"},
		{in: "uniform:5ms,15ms", want: "uniform"},
		{in: "exponential:10ms", want: "exponential"},
		{in: "normal:167ms,5ms", want: "normal"},
		{in: "lognormal:10ms,0.5", want: "lognormal"},
		{in: `{"dist":"normal","mean":"167ms","sd":"5ms"}`, want: "normal"},
		{in: `{"dist":"fixed","value":"10ms","shape":1}`, err: `unknown field "shape"`},
		{in: "pareto:1", err: `unknown distribution "pareto"`},
		{in: "fixed", err: `fixed takes 1 parameter(s), got ""`},
		{in: "normal:1ms", err: "normal takes 2 parameter(s)"},
		{in: "lognormal:10ms,wide", err: `sigma: want a number, got "wide"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDistFlag(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.String(), tt.want) {
				t.Errorf("%s parsed as %s", tt.in, d)
			}
		})
	}
}

// TestFlagsRoundTrip pins the command line a provider writes (Args) to the
// one the command parses (Bind): every field survives the trip.
func TestFlagsRoundTrip(t *testing.T) {
	cfg := Config{ID: 7, Workers: 3, QueueLimit: 40, Seed: 99, KeepAbandoned: true,
		Service:      Dist{Kind: "normal", Mean: Duration(167 * time.Millisecond), SD: Duration(5 * time.Millisecond)},
		InitialFault: Fail{Status: 502, Delay: Duration(2 * time.Millisecond)},
		Shutdown:     Shutdown{Mode: ShutdownDrain, Delay: 1500 * time.Millisecond}}
	want, err := FlagsOf(cfg, "127.0.0.1:9001")
	if err != nil {
		t.Fatal(err)
	}
	got := DefaultFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	got.Bind(fs)
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %+v, wrote %+v", got, want)
	}
	back, err := got.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("config after the round trip %+v, want %+v", back, cfg)
	}
}

// TestFlagsRoundTripDefaultShutdown: a configuration that leaves the
// shutdown out gets a command line without the shutdown's flags, and
// back the same; an explicit finish survives the trip too.
func TestFlagsRoundTripDefaultShutdown(t *testing.T) {
	for _, sd := range []Shutdown{{}, {Mode: ShutdownFinish}} {
		cfg := Config{ID: 1, Workers: 8, Seed: 1, Service: Fixed(10 * time.Millisecond), Shutdown: sd}
		want, err := FlagsOf(cfg, "127.0.0.1:9001")
		if err != nil {
			t.Fatal(err)
		}
		args := want.Args()
		if has := slices.Contains(args, "--shutdown"); has != (sd.Mode != "") || slices.Contains(args, "--shutdown-delay") {
			t.Errorf("shutdown %+v: args %q", sd, args)
		}
		got := DefaultFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		got.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		back, err := got.Config()
		if err != nil {
			t.Fatal(err)
		}
		if back.Shutdown != sd {
			t.Errorf("shutdown after the round trip %+v, want %+v", back.Shutdown, sd)
		}
	}
}

// TestSidecarFlagsRoundTrip is TestFlagsRoundTrip for a sidecar: Args
// leaves out the fake server's flags, which --upstream refuses.
func TestSidecarFlagsRoundTrip(t *testing.T) {
	cfg := SidecarConfig{ID: 4, Upstream: "http://127.0.0.1:8080", GRPCUpstream: "http://127.0.0.1:8081", HealthPath: "/healthz?deep=1", Seed: 7,
		InitialFault: Slow{Factor: 3}, Shutdown: Shutdown{Mode: ShutdownAbrupt}}
	want, err := SidecarFlagsOf(cfg, "127.0.0.1:9002")
	if err != nil {
		t.Fatal(err)
	}
	got := DefaultFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	got.Bind(fs)
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %+v, wrote %+v", got, want)
	}
	back, err := got.SidecarConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("config after the round trip %+v, want %+v", back, cfg)
	}
	if _, err := got.Config(); err == nil {
		t.Errorf("Config of sidecar flags: no error, want one naming --upstream")
	}
}

// TestParseDistFlagJSONNamesField pins what fuzzing found in the JSON form
// of --service: a bad value's error did not name its field, a JSON syntax
// error read as a bare "unexpected EOF", and text after the object was
// silently ignored.
func TestParseDistFlagJSONNamesField(t *testing.T) {
	tests := []struct {
		in, err string
	}{
		{in: `{"dist":"fixed","value":5}`, err: `value: want a duration like "10ms", got 5`},
		{in: `{"dist":"normal","mean":"1ms","sd":true}`, err: `sd: want a duration like "10ms", got true`},
		{in: `{"dist":7}`, err: "dist: want a string, got number"},
		{in: `{"dist":"fixed","shape":1}`, err: `shape: unknown field "shape"`},
		{in: `{"dist":"fixed"`, err: "malformed JSON: unexpected end of JSON input"},
		{in: `{"dist":"fixed","value":"1ms"} {"dist":"fixed"}`, err: "malformed JSON: invalid character '{' after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseDistFlag(tt.in)
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Fatalf("ParseDistFlag(%s): err = %v, want one starting %q", tt.in, err, tt.err)
			}
		})
	}
}

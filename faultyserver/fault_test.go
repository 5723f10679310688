package faultyserver

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

var (
	_ Fault = Slow{}
	_ Fault = Fail{}
	_ Fault = ErrorRate{}
	_ Fault = Hang{}
	_ Fault = Reset{}
	_ Fault = Jitter{}

	_ ContainerFault = Pause{}
	_ ContainerFault = Kill{}
	_ ContainerFault = CPU{}
)

func TestFaultModes(t *testing.T) {
	want := []string{"bandwidth", "blackhole", "cpu", "cut", "error-rate", "fail", "hang", "jitter", "kill",
		"latency", "loss", "pause", "refuse", "reset", "slow", "slow-close", "syn-drop"}
	if diff := cmp.Diff(want, FaultModes()); diff != "" {
		t.Fatalf("FaultModes() mismatch (-want +got):\n%s", diff)
	}
}

// roundTrips holds at least one fault of every mode with its JSON form and
// description.
var roundTrips = []struct {
	name     string
	fault    Fault
	json     string
	describe string
}{
	{"slow factor", Slow{Factor: 2.5}, `{"mode":"slow","factor":2.5}`, "slow factor=2.5"},
	{"slow latency with health", Slow{Latency: Duration(200 * time.Millisecond), Health: Health{Status: 503}},
		`{"mode":"slow","latency":"200ms","health_status":503}`, "slow latency=200ms health_status=503"},
	{"fail defaults", Fail{Status: 503, Delay: Duration(time.Millisecond)}, `{"mode":"fail","status":503,"delay":"1ms"}`, "fail status=503 delay=1ms"},
	{"fail no delay", Fail{Status: 500}, `{"mode":"fail","status":500,"delay":"0s"}`, "fail status=500 delay=0s"},
	{"error-rate", ErrorRate{P: 0.25, Status: 429, Delay: Duration(5 * time.Millisecond)},
		`{"mode":"error-rate","p":0.25,"status":429,"delay":"5ms"}`, "error-rate p=0.25 status=429 delay=5ms"},
	{"hang", Hang{}, `{"mode":"hang"}`, "hang"},
	{"hang unhealthy", Hang{Health{Status: 500}}, `{"mode":"hang","health_status":500}`, "hang health_status=500"},
	{"reset", Reset{}, `{"mode":"reset"}`, "reset"},
	{"reset connection", Reset{Scope: ResetConnection}, `{"mode":"reset","scope":"connection"}`, "reset scope=connection"},
	{"jitter", Jitter{MinFactor: 1, MaxFactor: 5}, `{"mode":"jitter","min_factor":1,"max_factor":5}`, "jitter min_factor=1 max_factor=5"},
	{"pause", Pause{}, `{"mode":"pause"}`, "pause"},
	{"kill", Kill{}, `{"mode":"kill"}`, "kill"},
	{"cpu", CPU{CPUs: 0.1}, `{"mode":"cpu","cpus":0.1}`, "cpu cpus=0.1"},
	{"bandwidth", Bandwidth{Rate: 64 << 10}, `{"mode":"bandwidth","rate":"64KiB"}`, "bandwidth rate=64KiB"},
	{"cut", Cut{After: 1536, Then: CutReset, P: 0.5}, `{"mode":"cut","after":"1536B","then":"reset","p":0.5}`, "cut after=1536B then=reset p=0.5"},
	{"blackhole", Blackhole{}, `{"mode":"blackhole"}`, "blackhole"},
	{"refuse", Refuse{}, `{"mode":"refuse"}`, "refuse"},
	{"slow-close", SlowClose{Delay: Duration(2 * time.Second)}, `{"mode":"slow-close","delay":"2s"}`, "slow-close delay=2s"},
	{"latency", Latency{Per: PerConnection, Value: Duration(50 * time.Millisecond)}, `{"mode":"latency","per":"connection","value":"50ms"}`, "latency per=connection value=50ms"},
	{"loss", Loss{P: 0.05}, `{"mode":"loss","p":0.05}`, "loss p=0.05"},
	{"syn-drop", SynDrop{P: 1}, `{"mode":"syn-drop","p":1}`, "syn-drop p=1"},
}

func TestMarshalParseRoundTrip(t *testing.T) {
	covered := map[string]bool{}
	for _, tt := range roundTrips {
		t.Run(tt.name, func(t *testing.T) {
			covered[tt.fault.Mode()] = true
			b, err := MarshalFault(tt.fault)
			if err != nil {
				t.Fatalf("MarshalFault: %v", err)
			}
			if string(b) != tt.json {
				t.Errorf("MarshalFault = %s, want %s", b, tt.json)
			}
			got, err := ParseFault(b)
			if err != nil {
				t.Fatalf("ParseFault(%s): %v", b, err)
			}
			if diff := cmp.Diff(tt.fault, got); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
			if d := Describe(tt.fault); d != tt.describe {
				t.Errorf("Describe = %q, want %q", d, tt.describe)
			}
		})
	}
	for _, m := range FaultModes() {
		if !covered[m] {
			t.Errorf("mode %q has no round-trip case", m)
		}
	}
	if d := Describe(nil); d != "none" {
		t.Errorf("Describe(nil) = %q, want none", d)
	}
}

func TestParseFaultDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Fault
	}{
		{"fail", `{"mode":"fail"}`, Fail{Status: 503, Delay: Duration(time.Millisecond)}},
		{"fail zero delay kept", `{"mode":"fail","delay":"0s"}`, Fail{Status: 503}},
		{"error-rate", `{"mode":"error-rate","p":0.1}`, ErrorRate{P: 0.1, Status: 503, Delay: Duration(time.Millisecond)}},
		{"error-rate p omitted is 0", `{"mode":"error-rate"}`, ErrorRate{Status: 503, Delay: Duration(time.Millisecond)}},
		{"health_status default", `{"mode":"hang"}`, Hang{}},
		{"whitespace and key order", ` { "delay" : "2ms", "mode" : "fail" } `, Fail{Status: 503, Delay: Duration(2 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFault([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseFault(%s): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if got.HealthStatus() != 200 {
				t.Errorf("HealthStatus() = %d, want 200", got.HealthStatus())
			}
		})
	}
}

// badFaults are rejected by ParseFault and by PUT /_chaos/fault; want is a
// substring of the error, naming the field.
var badFaults = []struct {
	name string
	body string
	want string
}{
	{"unknown mode", `{"mode":"explode"}`, `mode: unknown mode "explode"`},
	{"missing mode", `{"status":500}`, "mode: required"},
	{"mode not a string", `{"mode":3}`, "mode: want a string"},
	{"negative latency", `{"mode":"slow","latency":"-5ms"}`, "latency: must be > 0, got -5ms"},
	{"latency as number", `{"mode":"slow","latency":5}`, `latency: want a duration like "10ms", got 5`},
	{"latency without unit", `{"mode":"slow","latency":"5"}`, `latency: want a duration like "10ms", got "5"`},
	{"both factor and latency", `{"mode":"slow","factor":2,"latency":"10ms"}`, "factor, latency: set exactly one, got both"},
	{"neither factor nor latency", `{"mode":"slow"}`, "factor, latency: set exactly one"},
	{"negative factor", `{"mode":"slow","factor":-1}`, "factor: must be"},
	{"p above 1", `{"mode":"error-rate","p":1.5}`, "p: must be within [0,1], got 1.5"},
	{"p below 0", `{"mode":"error-rate","p":-0.1}`, "p: must be within [0,1], got -0.1"},
	{"p as string", `{"mode":"error-rate","p":"half"}`, "p: want a number, got string"},
	{"status 200 for fail", `{"mode":"fail","status":200}`, "status: must be within [400,599], got 200"},
	{"status as string", `{"mode":"fail","status":"503"}`, "status: want an integer, got string"},
	{"status fractional", `{"mode":"fail","status":503.5}`, "status: want an integer"},
	{"negative delay", `{"mode":"error-rate","p":0.5,"delay":"-1ms"}`, "delay: must be >= 0"},
	{"bad health_status", `{"mode":"hang","health_status":42}`, "health_status: must be within [200,599], got 42"},
	{"bad reset scope", `{"mode":"reset","scope":"socket"}`, `scope: must be "stream" or "connection", got "socket"`},
	{"unknown field", `{"mode":"fail","bogus":1}`, `bogus: unknown parameter for mode "fail"`},
	{"field of another mode", `{"mode":"hang","p":0.5}`, `p: unknown parameter for mode "hang"`},
	{"field in wrong case", `{"mode":"fail","Status":500}`, `Status: unknown parameter`},
	{"malformed JSON", `{"mode":`, "fault: malformed JSON"},
	{"trailing garbage", `{"mode":"hang"} x`, "fault: malformed JSON"},
	{"empty", ``, "fault: malformed JSON"},
	{"null", `null`, "fault: want a JSON object, got null"},
	{"array", `[1]`, "fault: want a JSON object, got array"},
}

func TestParseFaultErrors(t *testing.T) {
	for _, tt := range badFaults {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFault([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseFault(%s) = %#v, want an error containing %q", tt.body, f, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFault(%s) error %q, want it to contain %q", tt.body, err, tt.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	base := 10 * time.Millisecond
	tests := []struct {
		name  string
		fault Fault
		want  Action
	}{
		{"slow factor", Slow{Factor: 3}, Action{Kind: ActionServe, Service: 30 * time.Millisecond}},
		{"slow latency", Slow{Latency: Duration(time.Second)}, Action{Kind: ActionServe, Service: time.Second}},
		{"fail", Fail{Status: 500, Delay: Duration(time.Millisecond)}, Action{Kind: ActionFail, Status: 500, Delay: time.Millisecond}},
		{"error-rate never", ErrorRate{P: 0, Status: 503}, Action{Kind: ActionServe, Service: base}},
		{"error-rate always", ErrorRate{P: 1, Status: 503}, Action{Kind: ActionFail, Status: 503}},
		{"hang", Hang{}, Action{Kind: ActionHang}},
		{"reset", Reset{}, Action{Kind: ActionReset}},
		{"pause hangs", Pause{}, Action{Kind: ActionHang}},
		{"kill resets", Kill{}, Action{Kind: ActionReset}},
		{"cpu tenth is ten times slower", CPU{CPUs: 0.1}, Action{Kind: ActionServe, Service: 100 * time.Millisecond}},
		{"cpu above one unchanged", CPU{CPUs: 2}, Action{Kind: ActionServe, Service: base}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			if diff := cmp.Diff(tt.want, tt.fault.Plan(base, r)); diff != "" {
				t.Errorf("Plan mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestActionKindString(t *testing.T) {
	got := []string{ActionServe.String(), ActionFail.String(), ActionHang.String(), ActionReset.String(), ActionKind(9).String()}
	want := []string{"serve", "fail", "hang", "reset", "ActionKind(9)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFaultSpec(t *testing.T) {
	type doc struct {
		Faults []FaultSpec `json:"faults" yaml:"faults"`
	}
	const y = `faults:
  - mode: fail
    status: 500
    delay: 10ms
  - mode: slow
    factor: 4
`
	want := doc{Faults: []FaultSpec{
		{Fail{Status: 500, Delay: Duration(10 * time.Millisecond)}},
		{Slow{Factor: 4}},
	}}
	var got doc
	if err := yaml.Unmarshal([]byte(y), &got); err != nil {
		t.Fatalf("yaml.Unmarshal: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("YAML decode mismatch (-want +got):\n%s", diff)
	}
	var out strings.Builder
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(got); err != nil {
		t.Fatalf("yaml Encode: %v", err)
	}
	if out.String() != y {
		t.Errorf("yaml Encode =\n%s\nwant\n%s", out.String(), y)
	}

	js, err := json.Marshal(doc{Faults: []FaultSpec{{Hang{}}, {}}})
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if want := `{"faults":[{"mode":"hang"},null]}`; string(js) != want {
		t.Errorf("json.Marshal = %s, want %s", js, want)
	}
	var back doc
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	if diff := cmp.Diff(doc{Faults: []FaultSpec{{Hang{}}, {}}}, back); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}

	var bad doc
	err = yaml.Unmarshal([]byte("faults:\n  - mode: fail\n    status: 200\n"), &bad)
	if err == nil || !strings.Contains(err.Error(), "status: must be within") {
		t.Errorf("YAML with a bad status: error %v, want one naming status", err)
	}
}

func TestContainerFaults(t *testing.T) {
	for _, m := range FaultModes() {
		f, err := ParseFault(sampleFaultJSON(m))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		want := m == "pause" || m == "kill" || m == "cpu"
		if got := IsContainerFault(f); got != want {
			t.Errorf("IsContainerFault(%s) = %v, want %v", m, got, want)
		}
	}
	if _, err := ParseFault([]byte(`{"mode":"cpu"}`)); err == nil || !strings.Contains(err.Error(), "cpus: must be within") {
		t.Errorf("cpu without cpus: %v", err)
	}
	if _, err := ParseFault([]byte(`{"mode":"pause","health_status":500}`)); err == nil {
		t.Error("pause accepted health_status")
	}
	s, err := New(Config{Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.SetFault(Pause{})
	if err == nil || !strings.Contains(err.Error(), `"pause" acts on the instance's container`) {
		t.Errorf("server took a container fault: %v", err)
	}
	if s.Fault() != nil {
		t.Error("fault changed")
	}
}

func TestJitterPlan(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		min, max time.Duration // of the planned service for base 10ms
		err      string
	}{
		{"defaults 1..2", `{"mode":"jitter"}`, 10 * time.Millisecond, 20 * time.Millisecond, ""},
		{"1..5", `{"mode":"jitter","min_factor":1,"max_factor":5}`, 10 * time.Millisecond, 50 * time.Millisecond, ""},
		{"fixed factor", `{"mode":"jitter","min_factor":3,"max_factor":3}`, 30 * time.Millisecond, 30 * time.Millisecond, ""},
		{"max below min", `{"mode":"jitter","min_factor":3,"max_factor":2}`, 0, 0, "max_factor: must be"},
		{"zero min", `{"mode":"jitter","min_factor":0,"max_factor":2}`, 0, 0, "min_factor: must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFault([]byte(tt.json))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseFault: error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(NewSource(7))
			lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
			var sum time.Duration
			const n = 10000
			for range n {
				a := f.Plan(10*time.Millisecond, r)
				if a.Kind != ActionServe {
					t.Fatalf("kind %v, want serve", a.Kind)
				}
				lo, hi = min(lo, a.Service), max(hi, a.Service)
				sum += a.Service
			}
			if lo < tt.min || hi > tt.max {
				t.Errorf("service within [%v, %v], want within [%v, %v]", lo, hi, tt.min, tt.max)
			}
			// Uniform: the mean is the midpoint, and the draws come near both ends.
			mid := (tt.min + tt.max) / 2
			if mean := sum / n; mean < mid-mid/50 || mean > mid+mid/50 {
				t.Errorf("mean %v, want about %v", mean, mid)
			}
			if tt.max > tt.min && (lo > tt.min+(tt.max-tt.min)/100 || hi < tt.max-(tt.max-tt.min)/100) {
				t.Errorf("draws span [%v, %v], want close to [%v, %v]", lo, hi, tt.min, tt.max)
			}
		})
	}
}

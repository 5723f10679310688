package faultyserver

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	_ NetworkFault = Loss{}
	_ NetworkFault = SynDrop{}
)

func TestNetworkFaultsParse(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Fault
		json     string
		describe string
	}{
		{"loss", `{"mode":"loss","p":0.05}`, Loss{P: 0.05}, `{"mode":"loss","p":0.05}`, "loss p=0.05"},
		{"loss all", `{"mode":"loss","p":1}`, Loss{P: 1}, `{"mode":"loss","p":1}`, "loss p=1"},
		{"loss unhealthy", `{"mode":"loss","p":0.5,"health_status":503}`, Loss{P: 0.5, Health: Health{Status: 503}},
			`{"mode":"loss","p":0.5,"health_status":503}`, "loss p=0.5 health_status=503"},
		{"syn-drop default p", `{"mode":"syn-drop"}`, SynDrop{P: 1}, `{"mode":"syn-drop","p":1}`, "syn-drop p=1"},
		{"syn-drop half", `{"mode":"syn-drop","p":0.5}`, SynDrop{P: 0.5}, `{"mode":"syn-drop","p":0.5}`, "syn-drop p=0.5"},
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
			b, err := MarshalFault(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("MarshalFault = %s, want %s", b, tt.json)
			}
			if d := Describe(got); d != tt.describe {
				t.Errorf("Describe = %q, want %q", d, tt.describe)
			}
			if !IsNetworkFault(got) || IsContainerFault(got) {
				t.Errorf("IsNetworkFault = %v, IsContainerFault = %v; want a network fault only", IsNetworkFault(got), IsContainerFault(got))
			}
		})
	}
}

func TestNetworkFaultsRejectBadParameters(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"loss without p", `{"mode":"loss"}`, "p: is required"},
		{"loss p zero", `{"mode":"loss","p":0}`, "p: is required"},
		{"loss p above 1", `{"mode":"loss","p":1.5}`, "p: must be within (0,1], got 1.5"},
		{"loss p negative", `{"mode":"loss","p":-0.1}`, "p: must be within (0,1], got -0.1"},
		{"loss p text", `{"mode":"loss","p":"5%"}`, "p: want a number"},
		{"loss health_status", `{"mode":"loss","p":0.1,"health_status":700}`, "health_status: must be within [200,599], got 700"},
		{"loss unknown parameter", `{"mode":"loss","p":0.1,"delay":"1ms"}`, `delay: unknown parameter for mode "loss"`},
		{"syn-drop p zero", `{"mode":"syn-drop","p":0}`, "p: must be within (0,1], got 0"},
		{"syn-drop p above 1", `{"mode":"syn-drop","p":2}`, "p: must be within (0,1], got 2"},
		{"syn-drop p text", `{"mode":"syn-drop","p":true}`, "p: want a number"},
		{"syn-drop health_status", `{"mode":"syn-drop","health_status":100}`, "health_status: must be within [200,599], got 100"},
		{"syn-drop unknown parameter", `{"mode":"syn-drop","scope":"connection"}`, `scope: unknown parameter for mode "syn-drop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFault([]byte(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("ParseFault(%s) = %v, want an error starting with %q", tt.in, err, tt.want)
			}
		})
	}
	// JSON has no NaN; a Go literal can.
	for _, f := range []Fault{Loss{P: math.NaN()}, SynDrop{P: math.NaN()}} {
		if err := f.Validate(); err == nil || !strings.HasPrefix(err.Error(), "p: must be within (0,1]") {
			t.Errorf("%s with p NaN: Validate() = %v", f.Mode(), err)
		}
	}
}

func TestNetworkFaultsPlanAndDrops(t *testing.T) {
	r := rand.New(NewSource(1))
	for _, f := range []Fault{Loss{P: 0.3}, SynDrop{P: 1}} {
		if a := f.Plan(ms(7), r); a != (Action{Kind: ActionServe, Service: ms(7)}) {
			t.Errorf("%s: Plan = %+v, want to serve for the base time", f.Mode(), a)
		}
		if a := PlanProxy(f, r); a != (Action{Kind: ActionServe}) {
			t.Errorf("%s: PlanProxy = %+v, want to forward with nothing added", f.Mode(), a)
		}
		if st := f.HealthStatus(); st != 200 {
			t.Errorf("%s: HealthStatus = %d, want 200", f.Mode(), st)
		}
	}
	if diff := cmp.Diff([]Drop{{Dir: ToInstance, P: 0.3}, {Dir: FromInstance, P: 0.3}}, Loss{P: 0.3}.Drops()); diff != "" {
		t.Errorf("Loss.Drops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Drop{{Dir: ToInstance, SYN: true, P: 0.5}}, SynDrop{P: 0.5}.Drops()); diff != "" {
		t.Errorf("SynDrop.Drops (-want +got):\n%s", diff)
	}
}

// The server cannot drop packets: SetFault and the control API refuse a
// network fault, naming its mode, and the fault in force stays.
func TestServerRefusesNetworkFaults(t *testing.T) {
	s, err := New(Config{Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := Fault(Hang{})
	if err := s.SetFault(before); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Fault{Loss{P: 0.05}, SynDrop{P: 1}} {
		want := `mode: "` + f.Mode() + `" drops packets in the kernel`
		if err := s.SetFault(f); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("SetFault(%s) = %v, want an error starting with %q", Describe(f), err, want)
		}
		body, _ := MarshalFault(f)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, controlRequest(http.MethodPut, string(body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), f.Mode()) {
			t.Errorf("PUT %s: %d %s, want 400 naming the mode", body, rec.Code, rec.Body)
		}
		if diff := cmp.Diff(before, s.Fault()); diff != "" {
			t.Errorf("fault in force changed (-want +got):\n%s", diff)
		}
	}
}

// controlRequest is a request to the fault endpoint, as the fuzz target
// sends it.
func controlRequest(method, body string) *http.Request {
	return httptest.NewRequest(method, FaultPath, strings.NewReader(body))
}

// The simulator sees loss as retransmission delays: two packets a request,
// each lost with p, each loss adding LossRTO, doubled for a copy lost again.
func TestLossSimulatedPlan(t *testing.T) {
	r := rand.New(NewSource(7))
	const n = 200000
	late, twice := 0, 0
	for range n {
		a := SimulatedPlan(Loss{P: 0.05}, ms(2), r)
		if a.Kind != ActionServe || a.Service != ms(2) {
			t.Fatalf("plan %+v", a)
		}
		if a.Latency%LossRTO != 0 {
			t.Fatalf("latency %v is no multiple of %v", a.Latency, LossRTO)
		}
		if a.Latency > 0 {
			late++
		}
		if a.Latency >= 2*LossRTO {
			twice++
		}
	}
	if got, want := float64(late)/n, 1-0.95*0.95; math.Abs(got-want) > 0.003 {
		t.Errorf("late share %.4f, want %.4f", got, want)
	}
	// Two losses: both packets once (p²) or one twice (2p²), about 0.0075.
	if got := float64(twice) / n; got < 0.005 || got > 0.01 {
		t.Errorf("share late by two timeouts or more %.4f, want about 0.0075", got)
	}
	if a := (Loss{P: 0.05}).Plan(ms(2), r); a.Latency != 0 {
		t.Errorf("the server's own plan has latency %v", a.Latency)
	}
}

package external_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/external"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startByHand starts n fake servers the way a user would start their own
// service, apart from the run, and returns them.
func startByHand(t *testing.T, n int) []fleet.Backend {
	t.Helper()
	exp := runtest.MustExperiment(t, "by-hand", fmt.Sprintf(`
duration: 1s
rate: 10
instances: {count: %d, workers: 0, service: {dist: fixed, value: 2ms}}
strategies: [round-robin]
`, n))
	fl, err := process.Provider{Token: byHandToken}.Start(context.Background(), fleet.Spec{Instances: exp.Instances, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	return fl.Backends()
}

// byHandToken is the control token of the instances startByHand starts,
// which the runs give the external provider (lbchaos run --token).
const byHandToken = "by-hand-token"

// externalList is the YAML of instances.external for bs, each its own
// sidecar when sidecars is set (the fake server serves the control API).
func externalList(bs []fleet.Backend, sidecars bool) string {
	var b strings.Builder
	for _, x := range bs {
		if sidecars {
			fmt.Fprintf(&b, "\n    - {url: %s, sidecar: %s}", x.URL, x.URL)
		} else {
			fmt.Fprintf(&b, "\n    - %s", x.URL)
		}
	}
	return b.String()
}

func run(exp *experiments.Experiment) (*reports.Summary, error) {
	return harness.Run(context.Background(), exp, harness.Options{Engine: live.New(live.Options{Provider: external.Provider{Token: byHandToken}})})
}

// served returns how many requests each instance answered, by its own
// count.
func served(t *testing.T, bs []fleet.Backend) []int64 {
	t.Helper()
	var n []int64
	for _, b := range bs {
		st, err := b.Control.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		n = append(n, st.Served+st.Failed)
	}
	return n
}

func TestRunWithoutSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	bs := startByHand(t, 2)
	exp := runtest.MustExperiment(t, "ext-plain", `
duration: 1s
rate: 200
arrival: constant
instances:
  external:`+externalList(bs, false)+`
strategies: [round-robin, p2c]
`)
	sum, err := run(exp)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Backends != "external" {
		t.Errorf("backends %q, want external", sum.Backends)
	}
	for _, name := range exp.Strategies {
		st := runtest.StrategyByName(t, sum, name)
		runtest.CheckAccounting(t, st)
		if st.ErrorRatio != 0 {
			t.Errorf("%s: error ratio %v against healthy instances", name, st.ErrorRatio)
		}
		for id, in := range st.Instances {
			if in.Requests == 0 {
				t.Errorf("%s: instance %d got no request", name, id)
			}
			if in.Utilization != nil {
				t.Errorf("%s: instance %d has a utilization, but external instances report none", name, id)
			}
		}
	}
	// The instances counted the load themselves: both strategies' requests
	// and a health check per instance and strategy.
	for id, n := range served(t, bs) {
		if n < 150 {
			t.Errorf("instance %d served %d requests, want both strategies' share", id, n)
		}
	}
}

// TestRunWithSidecars uses each fake server as its own sidecar: the fault
// reaches instance 1 through the control API, and Close clears it.
func TestRunWithSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	bs := startByHand(t, 2)
	exp := runtest.MustExperiment(t, "ext-sidecar", `
duration: 1s
rate: 200
arrival: constant
instances:
  external:`+externalList(bs, true)+`
faults:
  - {instance: 1, at: 0s, fault: {mode: fail, status: 503}}
strategies: [round-robin]
`)
	sum, err := run(exp)
	if err != nil {
		t.Fatal(err)
	}
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	good, bad := st.Instances[0], st.Instances[1]
	if good.Errors != 0 || bad.Requests == 0 || bad.Errors != bad.Requests {
		t.Errorf("instance 0: %d errors of %d; instance 1: %d errors of %d; want only instance 1 failing, all of it",
			good.Errors, good.Requests, bad.Errors, bad.Requests)
	}
	f, err := bs[1].Control.Fault(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		t.Errorf("the sidecar still has fault %v after the run", f)
	}
}

func TestRefusedBeforeAnythingRuns(t *testing.T) {
	bs := startByHand(t, 2)
	tests := []struct {
		name     string
		sidecars bool
		faults   string
		want     string
	}{
		{
			name:   "http fault without sidecar",
			faults: `[{instance: 1, at: 100ms, fault: {mode: hang}}]`,
			want: fmt.Sprintf(`ext.yaml: faults[0]: mode "hang" on instance 1 (%s) needs an lbchaos sidecar in front of it to apply the fault; `+
				`give one with --sidecar or instances.external[1].sidecar`, bs[1].URL),
		},
		{
			name:     "container fault with sidecar",
			sidecars: true,
			faults:   `[{instance: 0, at: 0s, until: 500ms, fault: {mode: fail, status: 500}}, {instance: 1, at: 0s, fault: {mode: kill}}]`,
			want: fmt.Sprintf(`ext.yaml: faults[1]: mode "kill" acts on containers, and instance 1 (%s) runs outside lbchaos, which cannot reach its runtime`,
				bs[1].URL),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "ext", `
duration: 1s
rate: 100
instances:
  external:`+externalList(bs, tt.sidecars)+`
faults: `+tt.faults+`
strategies: [round-robin]
`)
			sum, err := run(exp)
			if err == nil || err.Error() != tt.want || sum != nil {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			for id, n := range served(t, bs) {
				if n != 0 {
					t.Errorf("instance %d served %d requests; nothing should have run", id, n)
				}
			}
		})
	}
}

func TestStart(t *testing.T) {
	bs := startByHand(t, 1)
	// An address nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	// An application whose root fails but whose /ready answers.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer app.Close()
	live := bs[0].URL.String()

	tests := []struct {
		name    string
		ext     []experiments.External
		health  string
		wantErr string // "" = starts
	}{
		{"answers", []experiments.External{{URL: live}}, "/", ""},
		{"sidecar answers", []experiments.External{{URL: dead, Sidecar: live}}, "/", ""},
		{"unreachable", []experiments.External{{URL: live}, {URL: dead}}, "/", "instance 1 (" + dead + ") does not answer"},
		{"unreachable sidecar", []experiments.External{{URL: live, Sidecar: dead}}, "/", "instance 0 (" + live + ", sidecar " + dead + ") does not answer"},
		{"health path fails", []experiments.External{{URL: app.URL}}, "/", "503 Service Unavailable"},
		{"health path answers", []experiments.External{{URL: app.URL}}, "/ready", ""},
		{"none", nil, "/", "no external instances"},
		{"sidecar refuses the token", []experiments.External{{URL: live, Sidecar: live}}, "/",
			"instance 0: sidecar " + live + " refused the run's token: give the token it was started with (lbchaos serve --token or LBCHAOS_TOKEN) to lbchaos run as --token or LBCHAOS_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := fleet.Spec{Instances: experiments.Instances{Count: len(tt.ext), External: tt.ext, HealthPath: tt.health}}
			p := external.Provider{Token: byHandToken}
			if strings.Contains(tt.name, "refuses the token") {
				p.Token = "not-" + byHandToken
			}
			fl, err := p.Start(t.Context(), spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer fl.Close()
			for i, b := range fl.Backends() {
				x := tt.ext[i]
				want, control := x.URL, x.Sidecar != ""
				if control {
					want = x.Sidecar
				}
				if b.ID != i || b.URL.String() != want || (b.Control != nil) != control {
					t.Errorf("backend %d = {%d %s control %v}, want {%d %s control %v}", i, b.ID, b.URL, b.Control != nil, i, want, control)
				}
			}
		})
	}
}

// TestStartResetsSidecars: each strategy starts from a fresh sidecar.
func TestStartResetsSidecars(t *testing.T) {
	bs := startByHand(t, 1)
	if err := bs[0].Control.SetFault(t.Context(), faultyserver.Fail{Status: 502}); err != nil {
		t.Fatal(err)
	}
	u := bs[0].URL.String()
	spec := fleet.Spec{Instances: experiments.Instances{Count: 1, External: []experiments.External{{URL: u, Sidecar: u}}, HealthPath: "/"}}
	fl, err := external.Provider{Token: byHandToken}.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err := bs[0].Control.Fault(t.Context()); err != nil || f != nil {
		t.Errorf("fault after Start = %v, %v; want none", f, err)
	}
}

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRunExternalByCount points runs at instances that already run with
// --backend alone: a file that gives only a count, and a shipped
// experiment whose count --backend replaces.
func TestRunExternalByCount(t *testing.T) {
	// Plain HTTP servers, as a user's own service: no control API.
	var hits [2]atomic.Int64
	var plain []string
	for i := range hits {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
		}))
		t.Cleanup(hs.Close)
		plain = append(plain, hs.URL)
	}
	dir := t.TempDir()
	countOnly := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(countOnly, []byte(`
duration: 1s
rate: 100
instances: {count: 3}
faults: [{instance: 2, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("refused", func(t *testing.T) {
		tests := []struct {
			name string
			args []string
			code int
			want string
		}{
			{"count only, own instances", []string{"run", countOnly, "--backends", "process"}, 2,
				countOnly + ": instances.service: is required for the instances lbchaos starts, which serve with that service time, e.g. service: {dist: fixed, value: 10ms}; without one the file runs only against instances that already run: --backend URL (one per instance)"},
			{"count only, simulated", []string{"run", countOnly, "--engine", "sim"}, 2,
				countOnly + ": instances.service: is required to simulate the instances (--engine sim)"},
			{"backend with kube", []string{"run", "fast-fail", "--backends", "kube", "--backend", plain[0]}, 2,
				"--backend with --backends kube: --backend points the run at instances that already run, and kube backends start instances of their own; leave --backends out (--backend implies external) or drop --backend"},
			{"fault without a control API", []string{"run", "fast-fail", "--backend", plain[0], "--backend", plain[1]}, 1,
				`experiments/fast-fail.yaml: faults[0]: mode "fail" on instance 0 (` + plain[0] + `) needs an lbchaos sidecar in front of it to apply the fault; give one with --sidecar`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out := filepath.Join(dir, "refused")
				_, _, err := runCLI(t, context.Background(), append(tt.args, "--out", out, "--quiet")...)
				if got := exitCode(err); got != tt.code || err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("exit code %d, error %v\nwant %d, %q", got, err, tt.code, tt.want)
				}
				if _, err := os.Stat(out); err == nil {
					t.Error("a refused run wrote its output directory")
				}
			})
		}
	})
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	t.Run("count only", func(t *testing.T) {
		out := filepath.Join(dir, "count-only")
		_, errOut, err := runCLI(t, context.Background(), "run", countOnly, "--backend", plain[0], "--backend", plain[1], "--out", out, "--quiet")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		for _, want := range []string{
			"lbchaos: mine: 2 instances, one per --backend (the file has 3)\n",
			"--backend: faults[0] (fail on instance 2) is not applied: the run has 2 instances, one per --backend (ids 0..1)",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
		s := readSummary(t, out)
		if s.Backends != "external" || len(s.Strategies) != 1 || len(s.Strategies[0].Instances) != 2 {
			t.Fatalf("backends %q, %d strategies, %+v", s.Backends, len(s.Strategies), s.Strategies)
		}
		for id, in := range s.Strategies[0].Instances {
			if in.Requests == 0 || in.Errors != 0 || hits[id].Load() < in.Requests {
				t.Errorf("instance %d: %+v, %d requests served; want requests, all answered", id, in, hits[id].Load())
			}
		}
	})
	t.Run("shipped", func(t *testing.T) {
		// Instances of lbchaos serve take the fault through their own
		// control API.
		urls := startByHand(t, 2)
		out := filepath.Join(dir, "shipped")
		// lbchaos run fast-fail --backend A --backend B, no --sidecar: an
		// lbchaos instance is found to be its own sidecar.
		_, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--backend", urls[0], "--backend", urls[1],
			"--strategies", "round-robin", "--duration", "1s", "--rate", "100", "--out", out, "--quiet")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		for _, want := range []string{"lbchaos: fast-fail: 2 instances, one per --backend (the file has 10)\n",
			"lbchaos: instance 0 (" + urls[0] + ") is an lbchaos instance: faults act through its own control API\n"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
		s := readSummary(t, out)
		in := s.Strategies[0].Instances
		if len(in) != 2 || in[0].Requests == 0 || in[0].Errors != in[0].Requests || in[1].Requests == 0 || in[1].Errors != 0 {
			t.Errorf("instances %+v\nwant two answering, instance 0 failing (fast-fail's fault)", in)
		}
	})
}

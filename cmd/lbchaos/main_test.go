package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/reports"
)

func runCLI(t *testing.T, ctx context.Context, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(ctx, args, &o, &e)
	return o.String(), e.String(), err
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func readSummary(t *testing.T, dir string) *reports.Summary {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := reports.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestList(t *testing.T) {
	out, _, err := runCLI(t, context.Background(), "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"baseline", "fast-fail", "slow-instance"} {
		if !strings.Contains(out, name+" ") {
			t.Errorf("list does not show %s:\n%s", name, out)
		}
	}
}

func TestRunWritesReportAndLatest(t *testing.T) {
	results := t.TempDir()
	out, errOut, err := runCLI(t, context.Background(), "run", "fast-fail",
		"--duration", "1s", "--rate", "400", "--strategies", "round-robin,least-inflight+eject(consecutive=5,duration=5s)",
		"--results", results, "--seed", "9", "--backends", "process")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	latest := filepath.Join(results, "fast-fail", "latest")
	target, err := os.Readlink(latest)
	if err != nil {
		t.Fatalf("latest link: %v", err)
	}
	if filepath.IsAbs(target) || !strings.HasSuffix(target, "Z") {
		t.Errorf("latest points at %q, want a relative timestamp directory", target)
	}
	for _, f := range []string{"summary.json", "report.md", "share.png", "share.svg", "experiment.yaml",
		"round-robin/latency.png", "round-robin/errors.png", "round-robin/results.bin.zst", "round-robin/latency.hlog",
		"least-inflight-eject-consecutive-5-duration-5s/rate.svg"} {
		if _, err := os.Stat(filepath.Join(latest, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	s := readSummary(t, latest)
	if s.Experiment != "fast-fail" || s.Seed != 9 || s.TargetRate != 400 || s.DurationS != 1 || len(s.Strategies) != 2 {
		t.Errorf("summary header: %+v", s)
	}
	if s.Backends != "process" || s.Engine != "real" || s.Partial {
		t.Errorf("backends %q engine %q partial %v", s.Backends, s.Engine, s.Partial)
	}
	// The terminal shows the comparison table.
	if !strings.Contains(out, "round-robin") || !strings.Contains(out, "report: ") {
		t.Errorf("stdout lacks the table:\n%s", out)
	}
	if !strings.Contains(errOut, "[1/2] round-robin") {
		t.Errorf("no progress on stderr:\n%s", errOut)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "no command given"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"no experiment", []string{"run"}, 2, "run: which experiment? Give a shipped one's name (lbchaos list) or a .yaml file"},
		{"unknown experiment", []string{"run", "nope"}, 2, `unknown experiment "nope"`},
		{"near miss of an experiment", []string{"run", "fastfail"}, 2, `unknown experiment "fastfail"; did you mean "fast-fail"?`},
		{"near miss of a command", []string{"runn", "fast-fail"}, 2, `unknown command "runn"; did you mean "run"?`},
		{"near miss of a flag", []string{"run", "fast-fail", "--strategy", "p2c"}, 2, `run: unknown flag --strategy; did you mean --strategies?`},
		{"duration without unit", []string{"run", "fast-fail", "--duration", "3"}, 2, `run: --duration: want a duration like 30s, 500ms or 2m, got "3"`},
		{"boolean flag value", []string{"run", "fast-fail", "--quiet=maybe"}, 2, `run: --quiet: want true or false, got "maybe"`},
		{"serve workers out of range", []string{"serve", "--workers", "-1"}, 2, `serve: --workers: must be >= 0 (0 = unlimited), got -1`},
		{"bad backends", []string{"run", "baseline", "--backends", "cloud"}, 2, `--backends: unknown value "cloud"`},
		{"bad engine", []string{"run", "baseline", "--engine", "quantum"}, 2, `--engine: unknown value "quantum"`},
		{"compare needs two", []string{"compare", "a"}, 2, "compare takes two run directories"},
		{"compare missing run", []string{"compare", "/nonexistent/a", "/nonexistent/b"}, 1, "/nonexistent/a"},
		{"kube flags without kube", []string{"run", "baseline", "--kube-network", "host"}, 2, "--kubeconfig and --kube-* act on kube backends; give --backends kube too (got --backends auto)"},
		{"bad kube network", []string{"run", "baseline", "--backends", "kube", "--kube-network", "overlay"}, 2, `--kube-network: unknown value "overlay" (auto, host or pod)`},
		{"bad kube cpu request", []string{"run", "baseline", "--backends", "kube", "--kube-cpu-request", "lots"}, 2, `--kube-cpu-request: "lots" is no positive CPU quantity`},
		{"kube without cluster", []string{"run", "baseline", "--backends", "kube", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "--backends kube: no Kubernetes API server answered: --kubeconfig /nonexistent/kubeconfig"},
		{"signal bad", []string{"signal", "KILL"}, 1, `signal "KILL": want STOP or CONT`},
		{"bad docker network", []string{"run", "baseline", "--docker-network", "overlay"}, 2, `--docker-network: unknown value "overlay"`},
		{"container fault in process", []string{"run", "crash", "--backends", "process"}, 1, `faults[0]: mode "kill" acts on containers, which process backends do not have; run with --backends docker`},
		{"bad rate", []string{"run", "baseline", "--rate", "-3"}, 2, "--rate: must be > 0"},
		{"rate zero", []string{"run", "baseline", "--rate", "0"}, 2, "--rate: must be > 0 requests per second, e.g. --rate 500, got 0; leave it out to run at the experiment's rate"},
		{"duration zero", []string{"run", "baseline", "--duration", "0s"}, 2, "--duration: must be > 0, e.g. --duration 10s, got 0s; leave it out to run for the experiment's duration"},
		{"duration negative", []string{"run", "--duration=-5s", "baseline"}, 2, "--duration: must be > 0, e.g. --duration 10s, got -5s"},
		{"duration zero in the file", []string{"run", "testdata/zero-duration.yaml"}, 2, "testdata/zero-duration.yaml: line 3: duration: must be > 0, e.g. duration: 30s; got 0s"},
		{"unquoted condition in the file", []string{"run", "testdata/unquoted-condition.yaml"}, 2, `testdata/unquoted-condition.yaml: line 7: error_ratio: the condition > 0.2 must be quoted, as in error_ratio: "> 0.2"`},
		{"generators zero", []string{"run", "baseline", "--generators", "0"}, 2, "--generators: must be >= 1, got 0"},
		{"generators too many", []string{"run", "baseline", "--generators", "65"}, 2, "--generators: must be within [1, 64], got 65"},
		{"generate without strategy", []string{"generate"}, 2, "--strategy: required"},
		{"generate bad index", []string{"generate", "--strategy", "p2c", "--generators", "2", "--generator", "2"}, 2, "--generator: must be within [0, 1], got 2"},
		{"generate bad start", []string{"generate", "--strategy", "p2c", "--generators", "2", "--generator", "1", "--start", "now"}, 2, "--start: "},
		{"bad duration flag", []string{"run", "baseline", "--duration", "soon"}, 2, `run: --duration: want a duration like 30s, 500ms or 2m, got "soon"`},
		{"bad strategy", []string{"run", "baseline", "--strategies", "round-robin,fastest"}, 2, `strategies[1]: unknown strategy "fastest"`},
		{"missing file", []string{"run", "./does-not-exist.yaml"}, 2, "does-not-exist.yaml"},
		{"serve bad service", []string{"serve", "--service", "fixed:soon"}, 2, `--service: fixed: want a duration like 10ms, got "soon"`},
		{"proxy without backends", []string{"proxy"}, 2, "--backend: give at least one backend URL"},
		{"proxy bad backend", []string{"proxy", "--backend", "ftp://x"}, 2, `--backend 1: "ftp://x" is not an http://host:port URL`},
		{"proxy bad strategy", []string{"proxy", "--backend", "http://127.0.0.1:1", "--strategy", "p3c"}, 2, `--strategy/--backend: unknown strategy "p3c"`},
		{"backend with docker", []string{"run", "baseline", "--backends", "docker", "--backend", "http://127.0.0.1:1"}, 2, "--backend with --backends docker: --backend points the run at instances that already run, and docker backends start instances of their own"},
		{"external without urls", []string{"run", "baseline", "--backends", "external"}, 2, "--backends external: give the instances' URLs with --backend URL (repeat, one per instance) or instances.external"},
		{"sidecar without backend", []string{"run", "baseline", "--backends", "external", "--sidecar", "http://127.0.0.1:1"}, 2, "--sidecar: give it with --backend URL"},
		{"sidecar count", []string{"run", "baseline", "--backends", "external", "--backend", "http://127.0.0.1:1", "--backend", "http://127.0.0.1:2", "--sidecar", "http://127.0.0.1:3"}, 2, "--sidecar: 1 given for 2 --backend URLs; give one per --backend, in order, or none"},
		{"bad backend url", []string{"run", "baseline", "--backends", "external", "--backend", "ftp://x"}, 2, `--backend 1: "ftp://x" is not an http:// or https:// URL with a host`},
		{"bad sidecar url", []string{"run", "baseline", "--backends", "external", "--backend", "http://x", "--sidecar", "x"}, 2, `--sidecar 1: "x" is not an http:// or https:// URL with a host`},
		{"backend with sim", []string{"run", "baseline", "--engine", "sim", "--backends", "external", "--backend", "http://127.0.0.1:1"}, 2, "--backend: external instances run with --engine real only (got --engine sim)"},
		{"health path without external", []string{"run", "baseline", "--health-path", "/up"}, 2, "--health-path: applies to external instances"},
		{"token with sim", []string{"run", "baseline", "--engine", "sim", "--token", "abcdefghijklmnopqrstuvwxyz012345"}, 2, "--token: applies to a real run's backends; a simulation (--engine sim) has none"},
		{"backends with sim", []string{"run", "baseline", "--engine", "sim", "--backends", "docker", "--docker-network", "host"}, 2, "--backends, --docker-network: apply to a real run's backends; a simulation (--engine sim) has none: leave them out"},
		{"kube with sim", []string{"run", "baseline", "--engine", "sim", "--backends", "kube", "--kube-load"}, 2, "--backends, --kube-load: apply to a real run's backends"},
		{"serve bad fault", []string{"serve", "--fault", `{"mode":"error-rate","p":2}`}, 2, "--fault: p: must be within [0,1]"},
		{"sidecar with workers", []string{"serve", "--upstream", "http://127.0.0.1:1", "--workers", "4"}, 2, "--workers: does not apply with --upstream"},
		{"sidecar with service", []string{"serve", "--upstream", "http://127.0.0.1:1", "--service", "fixed:1ms"}, 2, "--service: does not apply with --upstream"},
		{"sidecar bad upstream", []string{"serve", "--upstream", "127.0.0.1:1"}, 2, `--upstream: want http://host:port, got "127.0.0.1:1"`},
		{"health path without upstream", []string{"serve", "--health-path", "/up"}, 2, "--health-path: applies only with --upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, context.Background(), tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code %d, want %d (%v)", got, tt.code, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestRunReportsEveryBadFlag: every bad flag is named in one error, not
// only the first or the last one checked.
func TestRunReportsEveryBadFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"values", []string{"--duration", "0", "--rate", "0", "--repeat", "0"}, []string{
			"--duration: must be > 0, e.g. --duration 10s, got 0s",
			"--rate: must be > 0 requests per second, e.g. --rate 500, got 0",
			"--repeat: must be >= 1, got 0",
		}},
		{"a value and a simulation's backend flag", []string{"--engine", "sim", "--rate", "-1", "--backends", "docker"}, []string{
			"--rate: must be > 0 requests per second",
			"--backends: applies to a real run's backends; a simulation (--engine sim) has none",
		}},
		{"a value and an unknown engine", []string{"--engine", "fake", "--duration", "-1s"}, []string{
			"--duration: must be > 0",
			`--engine: unknown value "fake" (real or sim)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, context.Background(), append([]string{"run", "fast-fail"}, tc.args...)...)
			if got := exitCode(err); got != 2 {
				t.Fatalf("exit code %d, want 2 (%v)", got, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nwant it to contain %q", err, want)
				}
			}
		})
	}
}

// startByHand serves n fake instances on 127.0.0.1, as a user would start
// their own service apart from the run, and returns their base URLs.
func startByHand(t *testing.T, n int) []string {
	t.Helper()
	var urls []string
	for id := range n {
		srv, err := faultyserver.New(faultyserver.Config{ID: id, Service: faultyserver.Fixed(time.Millisecond), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { srv.Close(); hs.Close() })
		urls = append(urls, hs.URL)
	}
	return urls
}

// TestRunExternal points runs at instances that already run, by flags and
// by the experiment file, and checks what is refused up front.
func TestRunExternal(t *testing.T) {
	urls := startByHand(t, 2)
	// An instance that is not lbchaos's: it answers every path, and has
	// no control API to take a fault through.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(plain.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte("name: "+name+"\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	modeled := write("modeled", `
duration: 1s
rate: 100
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin]
`)
	listed := write("listed", `
duration: 1s
rate: 100
instances:
  external: [`+urls[0]+`, {url: `+urls[1]+`, sidecar: `+urls[1]+`}]
faults: [{instance: 1, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin]
`)
	t.Run("refused", func(t *testing.T) {
		tests := []struct {
			name string
			args []string
			code int
			want string
		}{
			{"http fault without sidecar", []string{"run", modeled, "--backends", "external", "--backend", urls[0], "--backend", plain.URL}, 1,
				`modeled.yaml: faults[0]: mode "fail" on instance 1 (` + plain.URL + `) needs an lbchaos sidecar in front of it to apply the fault; give one with --sidecar or instances.external[1].sidecar`},
			{"unreachable", []string{"run", modeled, "--backends", "external", "--backend", urls[0], "--backend", dead, "--sidecar", urls[0], "--sidecar", dead}, 1,
				"--backends external: instance 1 (" + dead + ", sidecar " + dead + ") does not answer"},
			{"listed with process", []string{"run", listed, "--backends", "process"}, 2,
				"--backends process: " + listed + " lists instances.external, instances that already run, and process backends would start instances of their own; use --backends external (or auto)"},
			{"listed with sim", []string{"run", listed, "--engine", "sim"}, 1,
				listed + ": instances.external: the simulator cannot model instances it did not start; give instances.service"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out := filepath.Join(dir, "refused")
				_, _, err := runCLI(t, context.Background(), append(tt.args, "--out", out)...)
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
	for name, args := range map[string][]string{
		"flags": {"run", modeled, "--backends", "external", "--backend", urls[0], "--backend", urls[1], "--sidecar", urls[0], "--sidecar", urls[1]},
		"file":  {"run", listed},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			_, errOut, err := runCLI(t, context.Background(), append(args, "--out", out, "--quiet")...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			s := readSummary(t, out)
			if s.Backends != "external" || len(s.Strategies) != 1 {
				t.Fatalf("backends %q, %d strategies", s.Backends, len(s.Strategies))
			}
			in := s.Strategies[0].Instances
			if in[0].Requests == 0 || in[0].Errors != 0 || in[1].Requests == 0 || in[1].Errors != in[1].Requests {
				t.Errorf("instances %+v\nwant instance 1 failing through its sidecar, instance 0 not", in)
			}
		})
	}
}

func TestSplitStrategies(t *testing.T) {
	got := splitStrategies("p2c, least-inflight+eject(consecutive=5,duration=5s) ,random")
	want := []string{"p2c", "least-inflight+eject(consecutive=5,duration=5s)", "random"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q", got)
	}
}

// TestInterruptWritesPartialResults sends SIGINT to a real lbchaos process
// in the middle of an attack and checks that it exits 130 after writing what
// it measured, marked partial.
func TestInterruptWritesPartialResults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lbchaos")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", "slow-instance", "--duration", "30s", "--rate", "500", "--out", out, "--backends", "process", "--skip-missing")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the attack is under way.
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(stderr.String(), "[1/") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if took := time.Since(sent); took > 10*time.Second {
		t.Errorf("took %v to stop after SIGINT", took)
	}
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 130 {
		t.Fatalf("exit: %v, want code 130\n%s", err, stderr.String())
	}
	s := readSummary(t, out)
	if !s.Partial || len(s.Strategies) != 1 || !s.Strategies[0].Partial || s.Strategies[0].Requests == 0 {
		raw, _ := json.Marshal(s)
		t.Errorf("summary not partial as expected: %s", raw)
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeRunsAnInstanceUntilCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var o, e bytes.Buffer
		done <- run(ctx, []string{"serve", "--id", "4", "--listen", addr, "--workers", "2",
			"--service", "fixed:1ms", "--fault", `{"mode":"fail","status":502}`}, &o, &e)
	}()
	ctl := &faultyserver.Client{BaseURL: "http://" + addr}
	deadline := time.Now().Add(5 * time.Second)
	for ctl.Healthy(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("serve did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	get := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(faultyserver.InstanceHeader)
	}
	// The fault given on the command line is in force from the start.
	if code, id := get(); code != 502 || id != "4" {
		t.Errorf("with --fault: status %d instance %q, want 502 from 4", code, id)
	}
	if err := ctl.ClearFault(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(); code != 200 {
		t.Errorf("after clearing: status %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// serve --upstream runs a fault sidecar in front of a real service.
func TestServeSidecarUntilCancelled(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/up" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "upstream %s", r.URL.Path)
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var o, e bytes.Buffer
		done <- run(ctx, []string{"serve", "--id", "6", "--listen", addr, "--upstream", up.URL,
			"--health-path", "/up", "--fault", `{"mode":"fail","status":502}`}, &o, &e)
	}()
	ctl := &faultyserver.Client{BaseURL: "http://" + addr}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := ctl.Fault(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve --upstream did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	get := func(path string) (int, string, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(faultyserver.InstanceHeader), string(b)
	}
	if code, id, _ := get("/x"); code != 502 || id != "6" {
		t.Errorf("with --fault: status %d instance %q, want 502 from 6", code, id)
	}
	if err := ctl.ClearFault(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get("/x"); code != 200 || body != "upstream /x" {
		t.Errorf("after clearing: %d %q, want the upstream's answer", code, body)
	}
	if code, _, _ := get("/healthz"); code != 503 {
		t.Errorf("/healthz: %d, want the upstream's /up status 503", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// buildStatic builds a static lbchaos binary, as the backend image needs.
func buildStatic(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lbchaos")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// requireDocker skips without a Docker daemon, except in CI, where the
// container tests must run.
func requireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.Available(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs Docker: %v", err)
		}
		t.Skipf("no Docker: %v", err)
	}
}

var runIDPattern = regexp.MustCompile(`containers of run ([0-9a-f]+)`)

// TestInterruptDockerRunLeavesNoContainer sends SIGINT to a docker run in
// the middle of its attack and then looks for any container or network of
// that run.
func TestInterruptDockerRunLeavesNoContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts containers")
	}
	requireDocker(t)
	bin := buildStatic(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "fast-fail", "--backends", "docker", "--duration", "30s", "--rate", "500", "--out", out, "--skip-missing")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The containers of the first strategy start after its "[1/" line;
	// once they are up (the line naming the run), the attack is under way.
	deadline := time.Now().Add(90 * time.Second)
	var m []string
	for m == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m = runIDPattern.FindStringSubmatch(stderr.String())
	}
	time.Sleep(1500 * time.Millisecond)
	if m == nil {
		_ = cmd.Process.Kill()
		t.Fatalf("no run id in the output:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, stderr.String())
	}
	for _, kind := range []string{"ps", "network"} {
		args := []string{kind, "ls", "--quiet", "--filter", "label=" + docker.LabelRun + "=" + m[1]}
		if kind == "ps" {
			args = []string{"ps", "--all", "--quiet", "--filter", "label=" + docker.LabelRun + "=" + m[1]}
		}
		left, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, left)
		}
		if strings.TrimSpace(string(left)) != "" {
			t.Errorf("run %s left %s objects behind: %s", m[1], kind, left)
		}
	}
	if s := readSummary(t, out); !s.Partial || s.Backends != "docker" {
		t.Errorf("summary: partial %v backends %q", s.Partial, s.Backends)
	}
}

// countRun counts the containers and networks of a run.
func countRun(t *testing.T, runID string) int {
	t.Helper()
	n := 0
	for _, args := range [][]string{
		{"ps", "--all", "--quiet", "--filter", "label=" + docker.LabelRun + "=" + runID},
		{"network", "ls", "--quiet", "--filter", "label=" + docker.LabelRun + "=" + runID},
	} {
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
		n += len(strings.Fields(string(out)))
	}
	return n
}

// TestNextStartSweepsAKilledRun kills a docker run with SIGKILL, which no
// handler can catch, and checks that the next run removes what it left.
func TestNextStartSweepsAKilledRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts containers")
	}
	requireDocker(t)
	bin := buildStatic(t)
	victim := exec.Command(bin, "run", "baseline", "--backends", "docker", "--duration", "30s", "--rate", "200",
		"--strategies", "round-robin", "--out", filepath.Join(t.TempDir(), "victim"))
	var stderr syncBuffer
	victim.Stderr = &stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var m []string
	for m == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m = runIDPattern.FindStringSubmatch(stderr.String())
	}
	if m == nil {
		_ = victim.Process.Kill()
		t.Fatalf("no run id in the output:\n%s", stderr.String())
	}
	_ = victim.Process.Kill()
	_ = victim.Wait()
	if n := countRun(t, m[1]); n == 0 {
		// Another lbchaos process (a concurrent test) started meanwhile
		// and swept them already; the check below still holds.
		t.Logf("the killed run %s was swept before the next start", m[1])
	}

	next := exec.Command(bin, "run", "baseline", "--backends", "docker", "--duration", "1s", "--rate", "100",
		"--strategies", "round-robin", "--out", filepath.Join(t.TempDir(), "next"))
	out, err := next.CombinedOutput()
	if err != nil {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	if n := countRun(t, m[1]); n != 0 {
		t.Errorf("%d objects of the killed run %s left after the next start:\n%s", n, m[1], out)
	}
}

// TestSimRunIsDeterministicAndComparable runs an experiment twice in virtual
// time through the CLI: the summaries are byte-identical, and compare shows
// no difference.
func TestSimRunIsDeterministicAndComparable(t *testing.T) {
	dir := t.TempDir()
	var sums [2][]byte
	for i, out := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")} {
		if _, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--out", out,
			"--duration", "5s", "--strategies", "round-robin,least-inflight+eject(consecutive=5,duration=5s)"); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = b
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Error("two sim runs of the same experiment and seed differ")
	}
	s := readSummary(t, filepath.Join(dir, "a"))
	if s.Engine != "sim" || s.Backends != "sim" || len(s.Strategies) != 2 {
		t.Errorf("engine %q backends %q strategies %d", s.Engine, s.Backends, len(s.Strategies))
	}
	out, _, err := runCLI(t, context.Background(), "compare", filepath.Join(dir, "a"), filepath.Join(dir, "b", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "least-inflight") {
		t.Errorf("compare output:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "pp") && !strings.Contains(line, "+0.00 pp") {
			t.Errorf("identical runs differ in: %s", line)
		}
	}
}

// TestWrongExpectationFailsTheRun runs, in virtual time, an experiment
// whose expectation contradicts the behaviour it exists to show.
func TestWrongExpectationFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../experiments/fast-fail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(data), "name: fast-fail", "name: wrong", 1) +
		"\n  - {strategy: least-inflight, error_ratio: \"< 0.15\"}\n"
	if !strings.Contains(string(data), "\nexpect:") || !strings.HasSuffix(strings.TrimSpace(string(data)), "}") {
		t.Fatalf("test bug: fast-fail.yaml no longer ends with its expect list")
	}
	path := filepath.Join(dir, "wrong.yaml")
	if err := os.WriteFile(path, []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only the strategy concerned: the others' expectations are missing,
	// which neither passes nor fails the run.
	out, _, err := runCLI(t, context.Background(), "run", path, "--engine", "sim", "--out", filepath.Join(dir, "out"),
		"--strategies", "least-inflight")
	total := strings.Count(wrong, "- {strategy:")
	if code := exitCode(err); code != 3 || !strings.Contains(err.Error(), fmt.Sprintf("1 of %d expectations failed", total)) {
		t.Fatalf("exit %d, err %v", code, err)
	}
	if !regexp.MustCompile(`FAILED\s+least-inflight\s+error_ratio < 0.15`).MatchString(out) {
		t.Errorf("the failed expectation is not shown:\n%s", out)
	}
	s := readSummary(t, filepath.Join(dir, "out"))
	failed := 0
	for _, r := range s.Expectations {
		if !r.Passed && !r.Missing {
			failed++
		}
	}
	if failed != 1 || s.KeyMetric != "error_ratio" {
		t.Errorf("summary: %d failed expectations, key metric %q", failed, s.KeyMetric)
	}
}

func TestCompareFailsOnRegression(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if _, errOut, err := runCLI(t, context.Background(), "run", "slow-instance", "--engine", "sim", "--out", a,
		"--strategies", "round-robin,least-inflight"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if _, _, err := runCLI(t, context.Background(), "compare", "--fail-on-regression", a, a); err != nil {
		t.Fatalf("a run regressed against itself: %v", err)
	}
	s := readSummary(t, a)
	s.Strategies[1].SlowRatio += 0.1 // least-inflight got much worse
	b := filepath.Join(dir, "b.json")
	f, err := os.Create(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteJSON(f, s); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, _, err := runCLI(t, context.Background(), "compare", a, b, "--fail-on-regression")
	if exitCode(err) != 3 || !strings.Contains(out, "REGRESSION") {
		t.Fatalf("exit %d (%v)\n%s", exitCode(err), err, out)
	}
}

// TestReportReRendersFromSavedData deletes a run's rendered artifacts and
// has `lbchaos report` make them again from summary.json.
func TestReportReRendersFromSavedData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--out", dir,
		"--duration", "3s", "--strategies", "p2c"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	rendered := []string{"report.md", "report.html", "share.png", "p2c/latency.svg", "percentiles.png"}
	for _, f := range rendered {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := runCLI(t, context.Background(), "report", dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range rendered {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("not re-rendered: %v", err)
		}
	}
}

func TestProgressPrinter(t *testing.T) {
	pr := harness.Progress{Strategy: "p2c", Index: 2, Total: 5, Elapsed: 3 * time.Second, Duration: 30 * time.Second, Results: 11900, Errors: 119, InFlight: 40}
	var plain bytes.Buffer
	p := newProgressPrinter(&plain)
	p.update(pr)
	p.update(pr) // within the interval: no second line
	if got := strings.Count(plain.String(), "\n"); got != 1 || !strings.Contains(plain.String(), "[2/5] p2c  3s/30s  3980 req/s  11900 results  1.00% errors") {
		t.Errorf("plain progress:\n%q", plain.String())
	}
	var tty bytes.Buffer
	p = &progressPrinter{w: &tty, tty: true, every: time.Second}
	p.update(pr)
	fmt.Fprintln(p, "      done")
	if got := tty.String(); !strings.HasPrefix(got, "\r\033[K[2/5] p2c") || !strings.Contains(got, "\r\033[K      done\n") {
		t.Errorf("terminal progress: %q", got)
	}
}

func TestProxyCommandServesUntilCancelled(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.URL.Path)
	}))
	defer backend.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), "access.log")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var o, e bytes.Buffer
		done <- run(ctx, []string{"proxy", "--listen", addr, "--strategy", "p2c+eject", "--backend", backend.URL, "--access-log", logPath}, &o, &e)
	}()
	deadline := time.Now().Add(5 * time.Second)
	var resp *http.Response
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/a/b", nil)
		req.Header.Set("X-Vegeta-Seq", "5")
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("proxy did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello from /a/b" || resp.Header.Get("X-Lbchaos-Upstream") != "0" {
		t.Errorf("got %q with upstream %q, want the backend's answer from 0", body, resp.Header.Get("X-Lbchaos-Upstream"))
	}
	stats, err := http.Get("http://" + addr + "/_lbchaos/stats")
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := io.ReadAll(stats.Body)
	stats.Body.Close()
	if !strings.Contains(string(sb), `"strategy": "p2c+eject"`) || !strings.Contains(string(sb), `"requests": 1`) {
		t.Errorf("stats %s", sb)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("proxy returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not stop")
	}
	if b, _ := os.ReadFile(logPath); string(b) != "5 0 200\n" {
		t.Errorf("access log %q, want \"5 0 200\\n\"", b)
	}
}

// TestRunAppRefused: a file with instances.app runs only on Docker, in the
// simulator only with a model, and never with --backend.
func TestRunAppRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte("name: "+name+"\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	app := write("app", `
duration: 1s
rate: 100
instances: {count: 2, app: {image: 'lbchaos-test/none:0', port: 8080, port_env: PORT}}
strategies: [round-robin]
`)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"process", []string{"run", app, "--backends", "process"}, 2,
			"--backends process: " + app + " gives instances.app, your image lbchaos-test/none:0, which lbchaos runs in containers beside its sidecars: it needs docker"},
		{"external", []string{"run", app, "--backends", "external", "--backend", "http://127.0.0.1:1", "--backend", "http://127.0.0.1:2"}, 2,
			"instances.app: and instances.external (or --backend) both say where the instances come from"},
		{"sim without a model", []string{"run", app, "--engine", "sim"}, 1,
			app + ": instances.app: the simulator cannot model a service it does not know (lbchaos-test/none:0); give instances.service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "refused")
			_, _, err := runCLI(t, context.Background(), append(tt.args, "--out", out)...)
			if got := exitCode(err); got != tt.code || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("exit code %d, error %v\nwant %d, %q", got, err, tt.code, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a refused run wrote its output directory")
			}
		})
	}
	t.Run("image missing", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds the binary")
		}
		requireDocker(t)
		out := filepath.Join(dir, "missing")
		cmd := exec.Command(buildStatic(t), "run", app, "--backends", "docker", "--docker-network", "host", "--out", out)
		b, err := cmd.CombinedOutput()
		want := app + ": instances.app.image: image lbchaos-test/none:0 is not present locally: build it (docker build -t lbchaos-test/none:0 ...) or load it (docker load -i ...); lbchaos never pulls"
		if err == nil || !strings.Contains(string(b), want) {
			t.Errorf("error %v, output:\n%s\nwant %q", err, b, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("a refused run wrote its output directory")
		}
	})
}

// TestInterruptGeneratorsLeavesNoProcess: Ctrl-C on a run with generators
// (SIGINT to its process group, as a terminal sends it) interrupts its
// generators, merges what they measured as partial results, and leaves
// none of them running.
func TestInterruptGeneratorsLeavesNoProcess(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary; reads /proc")
	}
	bin := buildStatic(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "fast-fail", "--strategies", "round-robin", "--generators", "2", "--duration", "30s", "--rate", "300", "--out", out, "--backends", "process")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	generators := func() []string { return generatorsOf(bin) }
	waitForGenerators(t, bin, 2, &stderr)
	time.Sleep(2500 * time.Millisecond) // into the attack
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 130 {
		t.Fatalf("exit: %v, want code 130\n%s", err, stderr.String())
	}
	if left := generators(); len(left) > 0 {
		t.Errorf("generators left running: pids %v", left)
	}
	s := readSummary(t, out)
	if !s.Partial || s.Generators != 2 || len(s.Strategies) != 1 || !s.Strategies[0].Partial || s.Strategies[0].Requests == 0 {
		raw, _ := json.Marshal(s)
		t.Errorf("summary not partial with 2 generators as expected: %s", raw)
	}
}

// generatorsOf returns the pids of the running `bin generate` processes.
func generatorsOf(bin string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.HasPrefix(cmdline, []byte(bin+"\x00generate\x00")) {
			found = append(found, e.Name())
		}
	}
	return found
}

func waitForGenerators(t *testing.T, bin string, n int, stderr *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(generatorsOf(bin)) < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := len(generatorsOf(bin)); got != n {
		t.Fatalf("%d generators running, want %d\n%s", got, n, stderr.String())
	}
}

// TestKilledCoordinatorLeavesNoGenerator: a run killed outright (SIGKILL,
// no chance to clean up) takes its generators with it.
func TestKilledCoordinatorLeavesNoGenerator(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary; reads /proc")
	}
	bin := buildStatic(t)
	cmd := exec.Command(bin, "run", "fast-fail", "--strategies", "round-robin", "--generators", "2", "--duration", "30s", "--rate", "300",
		"--out", filepath.Join(t.TempDir(), "out"), "--backends", "process")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForGenerators(t, bin, 2, &stderr)
	time.Sleep(1500 * time.Millisecond) // into the attack
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(generatorsOf(bin)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := generatorsOf(bin); len(left) > 0 {
		t.Errorf("generators outlived their coordinator: pids %v", left)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// TestServeRefusesOpenControl: serve will not open its control API to the
// network without a token, and says which flags change that.
func TestServeRefusesOpenControl(t *testing.T) {
	t.Setenv(faultyserver.TokenEnv, "")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"server on 0.0.0.0", []string{"serve", "--listen", "0.0.0.0:0"}, []string{"--listen 0.0.0.0:0", "--token", faultyserver.TokenEnv, "--insecure-control"}},
		{"sidecar on every interface", []string{"serve", "--listen", ":0", "--upstream", "http://127.0.0.1:1"}, []string{"--listen :0", "--token", "--insecure-control"}},
		{"token with a space", []string{"serve", "--token", "two words"}, []string{"--token", faultyserver.TokenEnv, "printable ASCII"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, _, err := runCLI(t, ctx, tc.args...)
			if exitCode(err) != 2 {
				t.Fatalf("exit code %d (%v), want 2", exitCode(err), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// freeLoopback returns a 127.0.0.1 address nothing listens on.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeTokenFromEnvironment: serve takes its token from LBCHAOS_TOKEN,
// which its usage does not print; the control API then refuses a call
// without it and obeys one with it.
func TestServeTokenFromEnvironment(t *testing.T) {
	const token = "env-token-4d1c"
	t.Setenv(faultyserver.TokenEnv, token)
	usage, _, _ := runCLI(t, t.Context(), "serve", "-h") // help goes to stdout
	if !strings.Contains(usage, "-insecure-control") || strings.Contains(usage, token) {
		t.Errorf("serve -h names -insecure-control: %v; prints the token: %v", strings.Contains(usage, "-insecure-control"), strings.Contains(usage, token))
	}

	addr := freeLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--listen", addr, "--service", "fixed:1ms"}, &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	anon := &faultyserver.Client{BaseURL: "http://" + addr}
	deadline := time.Now().Add(5 * time.Second)
	for anon.Healthy(ctx) != nil { // the health check needs no token
		if time.Now().After(deadline) {
			t.Fatal("serve did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var apiErr *faultyserver.APIError
	if err := anon.SetFault(ctx, faultyserver.Fail{Status: 502}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("set fault without the token: %v, want 401", err)
	}
	ctl := &faultyserver.Client{BaseURL: "http://" + addr, Token: token}
	if f, err := ctl.Fault(ctx); err != nil || f != nil {
		t.Fatalf("the refused call left fault %v (%v), want none", f, err)
	}
	if err := ctl.SetFault(ctx, faultyserver.Fail{Status: 502}); err != nil {
		t.Fatalf("set fault with the token: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("after an authorized fault: status %d, want 502", resp.StatusCode)
	}
	if !strings.Contains(stderr.String(), "control API needs the token") {
		t.Errorf("start line does not say the control API is locked:\n%s", stderr.String())
	}
}

// TestRunExternalToken: a run gives external sidecars the token of
// --token (or LBCHAOS_TOKEN); without it a sidecar started with a token
// stops the run up front, with an error naming the flag.
func TestRunExternalToken(t *testing.T) {
	t.Setenv(faultyserver.TokenEnv, "")
	const token = "sidecar-token-77"
	srv, err := faultyserver.New(faultyserver.Config{ID: 0, Service: faultyserver.Fixed(time.Millisecond), Seed: 1, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	dir := t.TempDir()
	exp := filepath.Join(dir, "ext.yaml")
	if err := os.WriteFile(exp, []byte(`name: ext
duration: 1s
rate: 50
instances: {count: 1, service: {dist: fixed, value: 1ms}}
faults: [{instance: 0, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", exp, "--backends", "external", "--backend", hs.URL, "--sidecar", hs.URL, "--quiet"}

	_, _, err = runCLI(t, t.Context(), append(args, "--out", filepath.Join(dir, "no-token"))...)
	if err == nil || !strings.Contains(err.Error(), "refused the run's token") || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("run without the sidecar's token: %v, want an error naming --token", err)
	}
	_, _, err = runCLI(t, t.Context(), append(args, "--token", "bad token", "--out", filepath.Join(dir, "bad"))...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--token") {
		t.Errorf("run --token with a space: exit %d, %v; want 2 naming --token", exitCode(err), err)
	}
	if testing.Short() {
		t.Skip("real load for a second")
	}
	t.Setenv(faultyserver.TokenEnv, token)
	out := filepath.Join(dir, "env-token")
	if _, errOut, err := runCLI(t, t.Context(), append(args, "--out", out)...); err != nil {
		t.Fatalf("run with %s: %v\n%s", faultyserver.TokenEnv, err, errOut)
	}
	s := readSummary(t, out)
	if in := s.Strategies[0].Instances[0]; in.Requests == 0 || in.Errors != in.Requests {
		t.Errorf("instance 0: %d requests, %d errors; want every request failed by the fault set with the token", in.Requests, in.Errors)
	}
}

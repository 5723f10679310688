package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/live"
)

// TestGenerateEndpointsFlagErrors: what lbchaos generate refuses of
// --endpoints-listen and --target none, before it reads the experiment.
func TestGenerateEndpointsFlagErrors(t *testing.T) {
	base := []string{"generate", "--strategy", "p2c", "--generators", "1", "--generator", "0", "--start", "2030-01-01T00:00:00Z"}
	for _, tc := range []struct {
		name  string
		token string
		args  []string
		want  string
	}{
		{"none without the API", "", []string{"--target", "http://127.0.0.1:8080", "--target", "none"},
			"--target none (instance 1): an instance that does not exist yet needs --endpoints-listen"},
		{"address without a port", "t", []string{"--target", "none", "--endpoints-listen", "9091"},
			`--endpoints-listen "9091": want HOST:PORT or :PORT, such as :9091`},
		{"open on every interface", "", []string{"--target", "none", "--endpoints-listen", ":9091"},
			"--endpoints-listen :9091: without a token (" + faultyserver.TokenEnv + ")"},
		{"bad token", "a b", []string{"--target", "none", "--endpoints-listen", ":9091"},
			"--endpoints-listen :9091: the token in " + faultyserver.TokenEnv + ": must be printable ASCII without spaces"},
		{"with a proxy", "t", []string{"--target", "http://127.0.0.1:8080", "--proxy", "http://127.0.0.1:8081", "--endpoints-listen", ":9091"},
			"--endpoints-listen: with --proxy the proxy under test picks the instances"},
		{"bad target", "", []string{"--target", "nowhere"},
			`--target "nowhere": not a base URL such as http://127.0.0.1:8080, nor none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(faultyserver.TokenEnv, tc.token)
			_, _, err := runCLI(t, context.Background(), append(base, tc.args...)...)
			if code := exitCode(err); code != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("exit %d, error %v; want 2 and %s", code, err, tc.want)
			}
		})
	}
}

// TestGenerateServesEndpoints: lbchaos generate --endpoints-listen serves
// the endpoints API while it runs, with the token of its environment,
// and starts an instance given as --target none outside the set.
func TestGenerateServesEndpoints(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(file, []byte("duration: 500ms\nrate: 20\ntimeout: 1s\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	addr := free()
	// Nothing listens at instance 0's address: its requests are refused,
	// which is all this test needs of them.
	dead := "http://" + free()
	const token = "generate-endpoints-token"
	t.Setenv(faultyserver.TokenEnv, token)
	start := time.Now().Add(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, []string{"generate", "--experiment", file, "--strategy", "p2c", "--generators", "1", "--generator", "0",
			"--start", start.Format(time.RFC3339Nano), "--target", dead, "--target", "none", "--endpoints-listen", addr}, &out, &bytes.Buffer{})
	}()
	var got map[string]string
	for time.Now().Before(start.Add(time.Second)) && got == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+live.EndpointsPath, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var set live.EndpointSet
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&set) == nil {
				got = set.Endpoints
			}
			resp.Body.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(got) != 1 || got["0"] != dead {
		t.Errorf("endpoints %v, want instance 0 at %s alone", got, dead)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), engine.StreamPrefix) {
		t.Errorf("no generator stream on stdout: %.200q", out.String())
	}
}

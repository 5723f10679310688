package faultyserver

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const testToken = "s3cret-Token_1"

// controlTarget is an instance under test with its control API behind a
// real loopback HTTP server: a fake Server or a Sidecar.
type controlTarget struct {
	url    string
	client *http.Client
	c      controlled
}

// controlTargets starts a fake server and a sidecar, each with token.
func controlTargets(t *testing.T, token string) map[string]controlTarget {
	t.Helper()
	in := start(t, Config{ID: 4, Workers: 1, Service: Fixed(0), Token: token})
	up := startUpstream(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	sc := startSidecar(t, SidecarConfig{ID: 4, Token: token}, up)
	return map[string]controlTarget{
		"server":  {in.ts.URL, in.client, in.s},
		"sidecar": {sc.ts.URL, sc.client, sc.s},
	}
}

// send sends method path with the Authorization header auth ("" = none).
func (ct controlTarget) send(t *testing.T, method, path, auth, body string) result {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, ct.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := ct.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := result{status: resp.StatusCode, header: resp.Header}
	var eb errorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); err == nil {
		r.body = eb.Error
	}
	return r
}

// TestControlNeedsToken: with a token, every control request without it
// (no header, a wrong token, another scheme, the token in the query
// string) is answered 401 with a Bearer challenge and a message saying
// what is missing, and changes nothing; the right token works; /healthz
// stays open. Both the fake server and the sidecar.
func TestControlNeedsToken(t *testing.T) {
	const fault = `{"mode":"fail","status":503}`
	refused := []struct {
		name, path, auth string
		challenge, msg   string
	}{
		{"no token", FaultPath, "", `Bearer realm="lbchaos"`, "missing token"},
		{"wrong token", FaultPath, "Bearer not-" + testToken, `error="invalid_token"`, "wrong token"},
		{"longer token", FaultPath, "Bearer " + testToken + "x", `error="invalid_token"`, "wrong token"},
		{"basic scheme", FaultPath, "Basic " + testToken, `error="invalid_request"`, "want Bearer"},
		{"query token", FaultPath + "?token=" + testToken, "", `error="invalid_request"`, "Authorization: Bearer"},
		{"query access_token", FaultPath + "?access_token=" + testToken, "", `error="invalid_request"`, "query string"},
		// A query token is refused even beside the right header: it has
		// been written into a URL already.
		{"query token and header", FaultPath + "?token=" + testToken, "Bearer " + testToken, `error="invalid_request"`, "query string"},
	}
	for name, ct := range controlTargets(t, testToken) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range refused {
				ct.c.ClearFault()
				calls := []struct{ method, path, body string }{
					{"PUT", tc.path, fault},
					{"GET", strings.Replace(tc.path, FaultPath, StatsPath, 1), ""},
					{"DELETE", tc.path, ""},
					{"POST", strings.Replace(tc.path, FaultPath, ResetPath, 1), ""},
				}
				for i, call := range calls {
					if i == 2 {
						// DELETE and reset must leave a fault in place.
						if err := ct.c.SetFault(Fail{Status: 502}); err != nil {
							t.Fatal(err)
						}
					}
					r := ct.send(t, call.method, call.path, tc.auth, call.body)
					if r.status != http.StatusUnauthorized {
						t.Errorf("%s: %s %s: status %d, want 401", tc.name, call.method, call.path, r.status)
					}
					if ch := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer") || !strings.Contains(ch, tc.challenge) {
						t.Errorf("%s: %s: WWW-Authenticate %q, want Bearer with %s", tc.name, call.method, ch, tc.challenge)
					}
					if !strings.Contains(r.body, tc.msg) {
						t.Errorf("%s: %s: error %q, want it to say %q", tc.name, call.method, r.body, tc.msg)
					}
					want := Fault(nil)
					if i >= 2 {
						want = Fail{Status: 502}
					}
					if got := ct.c.Fault(); got != want {
						t.Errorf("%s: after a refused %s the fault is %v, want %v", tc.name, call.method, got, want)
					}
				}
			}

			ct.c.ClearFault()
			if r := ct.send(t, "PUT", FaultPath, "Bearer "+testToken, fault); r.status != http.StatusOK {
				t.Fatalf("PUT with the token: status %d (%s)", r.status, r.body)
			}
			if got, ok := ct.c.Fault().(Fail); !ok || got.Status != 503 {
				t.Errorf("fault after an authorized PUT: %v", got)
			}
			// The scheme is case-insensitive (RFC 7235 §2.1).
			if r := ct.send(t, "POST", ResetPath, "bearer "+testToken, ""); r.status != http.StatusNoContent || ct.c.Fault() != nil {
				t.Errorf("reset with the token: status %d, fault %v", r.status, ct.c.Fault())
			}
			if r := ct.send(t, "GET", HealthPath, "", ""); r.status != http.StatusOK {
				t.Errorf("/healthz without a token: status %d, want 200 (it stays open)", r.status)
			}

			// The Client sends its token; without one it gets an *APIError 401.
			ctl := &Client{BaseURL: ct.url, HTTP: ct.client, Token: testToken}
			if err := ctl.SetFault(t.Context(), Hang{}); err != nil {
				t.Errorf("Client with the token: %v", err)
			}
			if _, err := ctl.Stats(t.Context()); err != nil {
				t.Errorf("Client stats with the token: %v", err)
			}
			anon := &Client{BaseURL: ct.url, HTTP: ct.client}
			var apiErr *APIError
			if err := anon.Reset(t.Context()); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
				t.Errorf("Client without the token: %v, want a 401 *APIError", err)
			}
			if ct.c.Fault() != (Hang{}) {
				t.Errorf("a refused Reset changed the fault to %v", ct.c.Fault())
			}
			if err := anon.Healthy(t.Context()); err != nil {
				t.Errorf("health check without the token: %v", err)
			}
			ct.c.ClearFault()
		})
	}
}

// TestControlOpenWithoutToken: an instance without a token keeps its
// control API open, but still refuses a token in the query string.
func TestControlOpenWithoutToken(t *testing.T) {
	for name, ct := range controlTargets(t, "") {
		t.Run(name, func(t *testing.T) {
			if r := ct.send(t, "PUT", FaultPath, "", `{"mode":"fail","status":503}`); r.status != http.StatusOK {
				t.Errorf("PUT without a token: status %d (%s), want 200", r.status, r.body)
			}
			r := ct.send(t, "POST", ResetPath+"?token=x", "", "")
			if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "Authorization") {
				t.Errorf("reset with a query token: %d %q, want 401 pointing at the header", r.status, r.body)
			}
			if ct.c.Fault() == nil {
				t.Error("the refused reset cleared the fault")
			}
		})
	}
}

func TestCheckControlListen(t *testing.T) {
	for _, tc := range []struct {
		listen, token string
		insecure, ok  bool
	}{
		{"127.0.0.1:8080", "", false, true},
		{"127.0.0.2:0", "", false, true},
		{"[::1]:8080", "", false, true},
		{"localhost:8080", "", false, true},
		{"0.0.0.0:8080", "", false, false},
		{":8080", "", false, false},
		{"[::]:8080", "", false, false},
		{"10.1.2.3:8080", "", false, false},
		{"example.com:8080", "", false, false},
		{"0.0.0.0:8080", "t", false, true},
		{":8080", "", true, true},
	} {
		err := CheckControlListen(tc.listen, tc.token, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("CheckControlListen(%q, token %q, insecure %v) = %v, want ok %v", tc.listen, tc.token, tc.insecure, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrOpenControl) {
			t.Errorf("%s: error does not wrap ErrOpenControl: %v", tc.listen, err)
		}
		for _, want := range []string{"--listen " + tc.listen, "--token", TokenEnv, "--insecure-control"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error lacks %q: %v", tc.listen, want, err)
			}
		}
	}
	if err := CheckControlListen("nonsense", "", false); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("a listen address without a port: %v, want an error naming --listen", err)
	}
}

// TestFlagsToken: --token reaches the configuration and never the command
// line a provider writes; a non-loopback --listen needs it (or
// --insecure-control); a token that cannot travel in a header is refused.
func TestFlagsToken(t *testing.T) {
	parse := func(args ...string) Flags {
		t.Helper()
		f := DefaultFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := parse("--listen", "0.0.0.0:8080", "--token", testToken)
	cfg, err := f.Config()
	if err != nil || cfg.Token != testToken {
		t.Fatalf("Config with --token: token %q, %v", cfg.Token, err)
	}
	if slices.Contains(f.Args(), testToken) {
		t.Errorf("Args carry the token: %q", f.Args())
	}
	side := parse("--listen", ":9000", "--upstream", "http://127.0.0.1:8080", "--token", testToken)
	if sc, err := side.SidecarConfig(); err != nil || sc.Token != testToken {
		t.Errorf("SidecarConfig with --token: token %q, %v", sc.Token, err)
	}

	open := parse("--listen", "0.0.0.0:8080")
	if _, err := open.Config(); !errors.Is(err, ErrOpenControl) {
		t.Errorf("Config on 0.0.0.0 without a token: %v, want ErrOpenControl", err)
	}
	open = parse("--listen", ":9000", "--upstream", "http://127.0.0.1:8080")
	if _, err := open.SidecarConfig(); !errors.Is(err, ErrOpenControl) {
		t.Errorf("SidecarConfig on :9000 without a token: %v, want ErrOpenControl", err)
	}
	insecure := parse("--listen", "0.0.0.0:8080", "--insecure-control")
	if _, err := insecure.Config(); err != nil {
		t.Errorf("Config with --insecure-control: %v", err)
	}
	if !slices.Contains(insecure.Args(), "--insecure-control") {
		t.Errorf("Args lose --insecure-control: %q", insecure.Args())
	}

	bad := parse("--token", "two words")
	if _, err := bad.Config(); err == nil || !strings.Contains(err.Error(), "--token") || !strings.Contains(err.Error(), TokenEnv) {
		t.Errorf("a token with a space: %v, want an error naming --token and %s", err, TokenEnv)
	}
	if _, err := New(Config{Workers: 1, Service: Fixed(0), Token: "tab\there"}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("New with a token holding a tab: %v, want an error naming token", err)
	}
}

func TestNewTokenIsRandom(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || len(a) < 26 {
		t.Errorf("NewToken: %q then %q, want two different tokens of 128 bits", a, b)
	}
	if err := CheckToken(a); err != nil {
		t.Errorf("NewToken's token is not a valid one: %v", err)
	}
}

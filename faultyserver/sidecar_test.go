package faultyserver

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstreamServer is a real HTTP service for a sidecar to forward to; it counts
// the requests that reach it.
type upstreamServer struct {
	ts   *httptest.Server
	hits atomic.Int64
}

func startUpstream(t testing.TB, h http.HandlerFunc) *upstreamServer {
	t.Helper()
	u := &upstreamServer{}
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(u.ts.Close)
	return u
}

// sidecar is a Sidecar behind a real loopback HTTP server.
type sidecar struct {
	s      *Sidecar
	ts     *httptest.Server
	client *http.Client
}

// startSidecar runs a Sidecar for cfg in front of up until the test ends.
func startSidecar(t testing.TB, cfg SidecarConfig, up *upstreamServer) *sidecar {
	t.Helper()
	cfg.Upstream = up.ts.URL
	s, err := NewSidecar(cfg)
	if err != nil {
		t.Fatalf("NewSidecar(%+v): %v", cfg, err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return &sidecar{s: s, ts: ts, client: ts.Client()}
}

func (sc *sidecar) get(ctx context.Context, path string) result {
	return do(ctx, sc.client, http.MethodGet, sc.ts.URL+path, nil)
}

func (sc *sidecar) control() *Client {
	return &Client{BaseURL: sc.ts.URL, HTTP: sc.client}
}

func waitSidecar(t testing.TB, s *Sidecar, what string, cond func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stats %+v", what, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// echo answers with what it received: status 201, the request's method,
// path, query, X-Test header and body in the body, and X-Upstream set.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Upstream", "yes")
	w.Header().Set("X-Hop-Seen", strconv.FormatBool(r.Header.Get("X-Hop") != ""))
	w.Header().Set("Connection", "X-Resp-Hop")
	w.Header().Set("X-Resp-Hop", "1")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" ?"+r.URL.RawQuery+" "+r.Header.Get("X-Test")+" "+string(b))
}

func TestSidecarForwards(t *testing.T) {
	up := startUpstream(t, echo)
	if r := do(t.Context(), up.ts.Client(), http.MethodGet, up.ts.URL+"/", nil); r.header.Get("X-Resp-Hop") != "1" {
		t.Fatalf("the upstream's own answer lacks X-Resp-Hop: %v", r.header)
	}
	sc := startSidecar(t, SidecarConfig{ID: 5}, up)
	tests := []struct {
		name, method, path, body string
		want                     string
	}{
		{"get with query", http.MethodGet, "/a/b?x=1&y=two", "", "GET /a/b ?x=1&y=two hdr "},
		{"post with body", http.MethodPost, "/items", "payload", "POST /items ? hdr payload"},
		{"put", http.MethodPut, "/items/3", "new", "PUT /items/3 ? hdr new"},
		{"delete", http.MethodDelete, "/items/3", "", "DELETE /items/3 ? hdr "},
		{"escaped path", http.MethodGet, "/a%2Fb", "", "GET /a/b ? hdr "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, sc.ts.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Test", "hdr")
			req.Header.Set("Connection", "X-Hop")
			req.Header.Set("X-Hop", "1")
			resp, err := sc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusCreated || string(b) != tt.want {
				t.Errorf("%d %q, want 201 %q", resp.StatusCode, b, tt.want)
			}
			h := resp.Header
			if h.Get("X-Upstream") != "yes" || h.Get("X-Hop-Seen") != "false" || h.Get("X-Resp-Hop") != "" {
				t.Errorf("headers %v: want the upstream's X-Upstream, and the hop-by-hop X-Hop and X-Resp-Hop not forwarded", h)
			}
			if h.Get(InstanceHeader) != "5" || h.Get(LoadHeader) != "0" {
				t.Errorf("%s %q, %s %q; want 5 and 0", InstanceHeader, h.Get(InstanceHeader), LoadHeader, h.Get(LoadHeader))
			}
		})
	}
	if st := sc.s.Stats(); st.Served != int64(len(tests)) || st.Failed != 0 || st.InFlight != 0 {
		t.Errorf("stats %+v, want %d served", st, len(tests))
	}
}

// The upstream's first chunk reaches the client before the upstream has
// finished; with a slow factor too, on the dilated clock.
func TestSidecarStreams(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault Fault
	}{
		{"no fault", nil},
		{"slow factor", Slow{Factor: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "first\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
				_, _ = io.WriteString(w, "second\n")
			})
			sc := startSidecar(t, SidecarConfig{InitialFault: tt.fault}, up)
			defer close(release)
			resp, err := sc.client.Get(sc.ts.URL + "/stream")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line != "first\n" {
				t.Fatalf("first chunk %q %v", line, err)
			}
		})
	}
}

// The request body reaches the upstream as the client sends it.
func TestSidecarStreamsRequestBody(t *testing.T) {
	gotFirst := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		line, err := bufio.NewReader(r.Body).ReadString('\n')
		if err != nil || line != "first\n" {
			http.Error(w, "first chunk: "+line, http.StatusBadRequest)
			return
		}
		close(gotFirst)
		rest, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "rest "+string(rest))
	})
	sc := startSidecar(t, SidecarConfig{}, up)
	pr, pw := io.Pipe()
	done := make(chan result, 1)
	go func() { done <- do(t.Context(), sc.client, http.MethodPost, sc.ts.URL+"/upload", pr) }()
	_, _ = io.WriteString(pw, "first\n")
	select {
	case <-gotFirst:
	case <-time.After(5 * time.Second):
		pw.CloseWithError(errors.New("upstream never saw the first chunk"))
		t.Fatal("first chunk of the request body did not reach the upstream before the body ended")
	}
	_, _ = io.WriteString(pw, "second")
	pw.Close()
	if r := <-done; r.err != nil || r.status != 200 || r.body != "rest second" {
		t.Errorf("%d %q %v, want 200 \"rest second\"", r.status, r.body, r.err)
	}
}

func TestSidecarClientCancelReachesUpstream(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	})
	sc := startSidecar(t, SidecarConfig{}, up)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() { done <- sc.get(ctx, "/") }()
	<-arrived
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request not cancelled after its client went away")
	}
	<-done
	waitSidecar(t, sc.s, "dropped request", func(st Stats) bool { return st.Dropped == 1 && st.InFlight == 0 })
}

// Close answers a request being forwarded 503 and cancels it upstream.
func TestSidecarCloseCancelsForwarding(t *testing.T) {
	cancelled := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(cancelled)
	})
	sc := startSidecar(t, SidecarConfig{}, up)
	done := make(chan result, 1)
	go func() { done <- sc.get(t.Context(), "/") }()
	// In flight at the sidecar is not enough: the request must have reached
	// the upstream for Close to have something there to cancel.
	waitUntil(t, "the request to reach the upstream", func() bool { return up.hits.Load() == 1 })
	sc.s.Close()
	if r := <-done; r.err != nil || r.status != http.StatusServiceUnavailable || r.header.Get(LoadHeader) != "0" {
		t.Errorf("%d %v load %q, want 503 with load 0", r.status, r.err, r.header.Get(LoadHeader))
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request not cancelled by Close")
	}
	if r := sc.get(t.Context(), "/"); r.status != http.StatusServiceUnavailable {
		t.Errorf("request after Close: %d, want 503", r.status)
	}
	if r := sc.get(t.Context(), HealthPath); r.status != http.StatusServiceUnavailable {
		t.Errorf("health after Close: %d, want 503", r.status)
	}
}

// The load header counts the requests being forwarded, the answering one
// not among them.
func TestSidecarLoadHeader(t *testing.T) {
	release := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			<-release
		}
	})
	sc := startSidecar(t, SidecarConfig{}, up)
	first := make(chan result, 1)
	go func() { first <- sc.get(t.Context(), "/wait") }()
	waitSidecar(t, sc.s, "first in flight", func(st Stats) bool { return st.InFlight == 1 })
	wantLoad(t, "beside one forwarded request", sc.get(t.Context(), "/"), 200, 1)
	mustSetSidecarFault(t, sc.s, Fail{Status: 503})
	wantLoad(t, "failure beside one forwarded request", sc.get(t.Context(), "/"), 503, 1)
	close(release)
	wantLoad(t, "first, alone", <-first, 200, 0)
	if st := sc.s.Stats(); st.Served != 2 || st.Failed != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v, want served 2 failed 1 in_flight 0", st)
	}
}

func mustSetSidecarFault(t testing.TB, s *Sidecar, f Fault) {
	t.Helper()
	if err := s.SetFault(f); err != nil {
		t.Fatalf("SetFault(%#v): %v", f, err)
	}
}

func TestSidecarStats(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/err" {
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	})
	sc := startSidecar(t, SidecarConfig{ID: 3}, up)
	for _, p := range []string{"/", "/ok", "/err"} {
		sc.get(t.Context(), p)
	}
	st, err := sc.control().Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != 3 || st.Served != 2 || st.Failed != 1 || st.InFlight != 0 || st.Queued != 0 || st.BusyS <= 0 {
		t.Errorf("stats %+v, want id 3, served 2, failed 1, busy time", st)
	}
	if err := sc.control().Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := sc.s.Stats(); st.Served != 0 || st.Failed != 0 || st.BusyS != 0 {
		t.Errorf("stats after reset %+v, want zeros", st)
	}
}

func TestSidecarUpstreamDown(t *testing.T) {
	up := startUpstream(t, echo)
	sc := startSidecar(t, SidecarConfig{}, up)
	up.ts.Close()
	r := sc.get(t.Context(), "/")
	if r.err != nil || r.status != http.StatusBadGateway || !strings.Contains(r.body, "upstream:") {
		t.Errorf("%d %q %v, want 502 naming the upstream error", r.status, r.body, r.err)
	}
	if st := sc.s.Stats(); st.Failed != 1 {
		t.Errorf("stats %+v, want failed 1", st)
	}
}

// Each fault acts as on the fake server, as far as a proxy can.
func TestSidecarFaults(t *testing.T) {
	tests := []struct {
		name     string
		fault    Fault
		upDelay  time.Duration // upstream's time per request
		timeout  time.Duration // the client's; 0 = none
		status   int           // 0: the request must end in an error
		hits     int64         // requests reaching the upstream
		min, max time.Duration // bounds of the client's time; max is loose for a shared machine
		stats    func(Stats) bool
	}{
		{name: "none", upDelay: ms(20), status: 200, hits: 1, min: ms(20), max: ms(60)},
		{name: "fail", fault: Fail{Status: 503, Delay: Duration(ms(10))}, status: 503, hits: 0, min: ms(10), max: ms(50),
			stats: func(st Stats) bool { return st.Failed == 1 }},
		{name: "error-rate all", fault: ErrorRate{P: 1, Status: 502}, status: 502, hits: 0,
			stats: func(st Stats) bool { return st.Failed == 1 }},
		{name: "error-rate none", fault: ErrorRate{P: 0, Status: 502}, status: 200, hits: 1,
			stats: func(st Stats) bool { return st.Served == 1 }},
		{name: "slow latency adds", fault: Slow{Latency: Duration(ms(30))}, upDelay: ms(20), status: 200, hits: 1, min: ms(50), max: ms(95)},
		{name: "slow factor 3", fault: Slow{Factor: 3}, upDelay: ms(20), status: 200, hits: 1, min: ms(60), max: ms(105)},
		{name: "slow factor below 1 holds nothing", fault: Slow{Factor: 0.5}, upDelay: ms(20), status: 200, hits: 1, min: ms(20), max: ms(60)},
		{name: "jitter factor 2", fault: Jitter{MinFactor: 2, MaxFactor: 2}, upDelay: ms(20), status: 200, hits: 1, min: ms(40), max: ms(80)},
		{name: "hang", fault: Hang{}, timeout: ms(100), hits: 0, min: ms(100),
			stats: func(st Stats) bool { return st.Dropped == 1 }},
		// The client may retry a GET on a reset connection once.
		{name: "reset", fault: Reset{}, hits: 0,
			stats: func(st Stats) bool { return st.Failed >= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(tt.upDelay) })
			sc := startSidecar(t, SidecarConfig{}, up)
			if tt.fault != nil {
				if err := sc.control().SetFault(t.Context(), tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			r := sc.get(ctx, "/")
			switch {
			case tt.status == 0 && r.err == nil:
				t.Errorf("answered %d, want no answer", r.status)
			case tt.status != 0 && (r.err != nil || r.status != tt.status):
				t.Errorf("%d %v, want %d", r.status, r.err, tt.status)
			}
			if r.took < tt.min || (tt.max > 0 && r.took > tt.max) {
				t.Errorf("took %v, want within [%v, %v]", r.took, tt.min, tt.max)
			}
			if got := up.hits.Load(); got != tt.hits {
				t.Errorf("upstream saw %d requests, want %d", got, tt.hits)
			}
			if tt.stats != nil {
				waitSidecar(t, sc.s, "the fault's count", tt.stats)
			}
		})
	}
}

// Which requests fail under error-rate is drawn from the seeded source, as
// PlanProxy draws it; a reset replays the same choices.
func TestSidecarErrorRateShare(t *testing.T) {
	const n, seed = 200, 42
	f := ErrorRate{P: 0.3, Status: 503}
	up := startUpstream(t, echo)
	sc := startSidecar(t, SidecarConfig{Seed: seed, InitialFault: f}, up)
	var want []bool
	rng := rand.New(NewSource(seed))
	for range n {
		want = append(want, PlanProxy(f, rng).Kind == ActionFail)
	}
	for round := range 2 {
		var got []bool
		for range n {
			r := sc.get(t.Context(), "/")
			got = append(got, r.status == 503)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: failures differ from the seeded plan", round)
		}
		sc.s.Reset()
		mustSetSidecarFault(t, sc.s, f)
	}
	fails := 0
	for _, w := range want {
		if w {
			fails++
		}
	}
	if fails < 40 || fails > 80 {
		t.Errorf("%d of %d failed, want about 30%%", fails, n)
	}
}

func TestSidecarHealth(t *testing.T) {
	tests := []struct {
		name       string
		healthPath string
		fault      Fault
		want       int
		upHits     int64
	}{
		{"forwarded to /", "", nil, 200, 1},
		{"forwarded to the health path", "/status?deep=1", nil, 503, 1},
		{"fault without health_status", "/status?deep=1", Slow{Factor: 2}, 503, 1},
		{"fault health_status", "", Fail{Status: 500, Health: Health{Status: 503}}, 503, 0},
		{"fault health_status 200", "/status?deep=1", Hang{Health: Health{Status: 200}}, 200, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/status" && r.URL.RawQuery == "deep=1" {
					http.Error(w, "down", http.StatusServiceUnavailable)
				}
			})
			sc := startSidecar(t, SidecarConfig{ID: 2, HealthPath: tt.healthPath, InitialFault: tt.fault}, up)
			r := sc.get(t.Context(), HealthPath)
			if r.err != nil || r.status != tt.want || r.header.Get(InstanceHeader) != "2" {
				t.Errorf("%d %v instance %q, want %d from 2", r.status, r.err, r.header.Get(InstanceHeader), tt.want)
			}
			if got := up.hits.Load(); got != tt.upHits {
				t.Errorf("upstream saw %d requests, want %d", got, tt.upHits)
			}
			if st := sc.s.Stats(); st.Served+st.Failed != 0 {
				t.Errorf("health check counted: %+v", st)
			}
		})
	}
}

// A bad control request leaves the fault as it was.
func TestSidecarBadControlLeavesFault(t *testing.T) {
	up := startUpstream(t, echo)
	sc := startSidecar(t, SidecarConfig{}, up)
	ctl := sc.control()
	if err := ctl.SetFault(t.Context(), Fail{Status: 502}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, body, want string }{
		{"malformed", `{"mode":`, "fault: malformed JSON"},
		{"bad parameter", `{"mode":"slow","factor":-1}`, "factor:"},
		{"container fault", `{"mode":"kill"}`, `acts on the instance's container`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, sc.ts.URL+FaultPath, strings.NewReader(tt.body))
			r := func() result {
				resp, err := sc.client.Do(req)
				if err != nil {
					return result{err: err}
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return result{status: resp.StatusCode, body: string(b)}
			}()
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, tt.want) {
				t.Errorf("%d %q, want 400 containing %q", r.status, r.body, tt.want)
			}
			f, err := ctl.Fault(t.Context())
			if err != nil || !reflect.DeepEqual(f, Fault(Fail{Status: 502})) {
				t.Errorf("fault after a bad request %#v %v, want it unchanged", f, err)
			}
		})
	}
	if r := sc.get(t.Context(), "/"); r.status != 502 {
		t.Errorf("service under the kept fault: %d, want 502", r.status)
	}
}

func TestSidecarConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  SidecarConfig
		want string
	}{
		{"no upstream", SidecarConfig{}, `upstream: want http://host:port, got ""`},
		{"https", SidecarConfig{Upstream: "https://x:1"}, "upstream: want http://host:port"},
		{"no port", SidecarConfig{Upstream: "http://x"}, "upstream: want http://host:port"},
		{"path", SidecarConfig{Upstream: "http://x:1/api"}, "upstream: want http://host:port"},
		{"relative health path", SidecarConfig{Upstream: "http://x:1", HealthPath: "health"}, "health_path: want an absolute path"},
		{"negative id", SidecarConfig{ID: -2, Upstream: "http://x:1"}, "id: must be >= 0, or -1"},
		{"container fault", SidecarConfig{Upstream: "http://x:1", InitialFault: Pause{}}, `initial fault: mode: "pause"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSidecar(tt.cfg)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSidecar: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSidecarFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"valid", []string{"--upstream", "http://127.0.0.1:8080", "--health-path", "/healthz", "--seed", "3"}, ""},
		{"workers", []string{"--upstream", "http://127.0.0.1:8080", "--workers", "4"}, "--workers: does not apply with --upstream"},
		{"queue limit", []string{"--upstream", "http://127.0.0.1:8080", "--queue-limit", "4"}, "--queue-limit: does not apply with --upstream"},
		{"service", []string{"--upstream", "http://127.0.0.1:8080", "--service", "fixed:1ms"}, "--service: does not apply with --upstream"},
		{"keep abandoned", []string{"--upstream", "http://127.0.0.1:8080", "--keep-abandoned"}, "--keep-abandoned: does not apply with --upstream"},
		{"bad upstream", []string{"--upstream", "127.0.0.1:8080"}, `--upstream: want http://host:port, got "127.0.0.1:8080"`},
		{"bad health path", []string{"--upstream", "http://127.0.0.1:8080", "--health-path", "healthz"}, "--health-path: want an absolute path"},
		{"container fault", []string{"--upstream", "http://127.0.0.1:8080", "--fault", `{"mode":"kill"}`}, `--fault: mode: "kill" acts on`},
		{"bad fault", []string{"--upstream", "http://127.0.0.1:8080", "--fault", `{"mode":"slow"}`}, "--fault: factor, latency: set exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := DefaultFlags
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			f.Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			_, err := f.SidecarConfig()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	f := DefaultFlags
	f.HealthPath = "/up"
	if _, err := f.Config(); err == nil || !strings.Contains(err.Error(), "--health-path: applies only with --upstream") {
		t.Errorf("Config with --health-path and no --upstream: %v", err)
	}
}

// Every fault whose Plan serves a request for other than its service time
// plans for a proxy itself: otherwise PlanProxy would forward such a
// request with nothing added.
func TestPlanProxyCoversServiceTime(t *testing.T) {
	for _, name := range FaultModes() {
		f, err := ParseFault(sampleFaultJSON(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if IsContainerFault(f) {
			continue
		}
		_, ok := f.(ProxyPlanner)
		for seed := range uint64(20) {
			base := ms(10)
			a := f.Plan(base, rand.New(NewSource(seed)))
			if a.Kind == ActionServe && a.Service != base && !ok {
				t.Errorf("%s: Plan serves for %v given %v, but the fault has no PlanProxy", name, a.Service, base)
				break
			}
		}
	}
}

// sampleFaultJSON is a valid fault of mode name.
func sampleFaultJSON(name string) []byte {
	switch name {
	case "slow":
		return []byte(`{"mode":"slow","factor":2}`)
	case "cpu":
		return []byte(`{"mode":"cpu","cpus":0.5}`)
	case "loss":
		return []byte(`{"mode":"loss","p":0.05}`)
	}
	return []byte(`{"mode":"` + name + `"}`)
}

func TestPlanProxy(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  Action
	}{
		{"none", nil, Action{Kind: ActionServe}},
		{"slow factor", Slow{Factor: 3}, Action{Kind: ActionServe, Scale: 3}},
		{"slow latency", Slow{Latency: Duration(ms(30))}, Action{Kind: ActionServe, Service: ms(30)}},
		{"jitter", Jitter{MinFactor: 2, MaxFactor: 2}, Action{Kind: ActionServe, Scale: 2}},
		{"fail", Fail{Status: 503, Delay: Duration(ms(1))}, Action{Kind: ActionFail, Status: 503, Delay: ms(1)}},
		{"error-rate served", ErrorRate{P: 0, Status: 503}, Action{Kind: ActionServe}},
		{"hang", Hang{}, Action{Kind: ActionHang}},
		{"reset", Reset{}, Action{Kind: ActionReset}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanProxy(tt.fault, rand.New(NewSource(1))); got != tt.want {
				t.Errorf("PlanProxy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestServeSidecarShutsDownOnCancel(t *testing.T) {
	up := startUpstream(t, echo)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ServeSidecar(ctx, SidecarConfig{ID: 9, Upstream: up.ts.URL, InitialFault: Hang{}}, "127.0.0.1:0",
			func(format string, args ...any) {
				if strings.Contains(format, "listening") {
					addrc <- args[1].(interface{ String() string }).String()
				}
			})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("ServeSidecar: %v", err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	hung := make(chan result, 1)
	go func() { hung <- do(context.Background(), hc, "GET", "http://"+addr+"/", nil) }()
	time.Sleep(20 * time.Millisecond) // let the request arrive and hang
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeSidecar: %v, want nil after cancel", err)
		}
	case <-time.After(ShutdownGrace + 2*time.Second):
		t.Fatal("ServeSidecar did not return after cancel")
	}
	if r := <-hung; r.err == nil && r.status != http.StatusServiceUnavailable {
		t.Errorf("hanging request at shutdown: %d, want 503 or a closed connection", r.status)
	}
}

// BenchmarkSidecarOverhead measures the latency a sidecar adds to a request
// over a direct call to the same upstream, which answers at once: each
// iteration sends one request each way, sequentially, on kept-alive
// connections, and the added p50 and p99 are reported in microseconds.
func BenchmarkSidecarOverhead(b *testing.B) {
	up := startUpstream(b, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	sc := startSidecar(b, SidecarConfig{}, up)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	get := func(url string) time.Duration {
		begin := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(begin)
	}
	var direct, via []time.Duration
	for b.Loop() {
		direct = append(direct, get(up.ts.URL+"/"))
		via = append(via, get(sc.ts.URL+"/"))
	}
	q := func(d []time.Duration, p float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(p*float64(len(d)-1))]) / 1e3
	}
	b.ReportMetric(q(direct, 0.5), "direct-p50-µs")
	b.ReportMetric(q(via, 0.5)-q(direct, 0.5), "p50-added-µs")
	b.ReportMetric(q(via, 0.99)-q(direct, 0.99), "p99-added-µs")
}

// BenchmarkSidecarThroughput measures the cost of one forwarded request
// under parallel load: the same upstream called directly and through a
// sidecar, from 8 clients per core. The difference of the two ns/op (and
// allocs/op, which counts the client's and upstream's allocations too) is
// what the sidecar's hop costs the machine.
func BenchmarkSidecarThroughput(b *testing.B) {
	up := startUpstream(b, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	sc := startSidecar(b, SidecarConfig{}, up)
	for _, c := range []struct{ name, url string }{{"direct", up.ts.URL + "/"}, {"sidecar", sc.ts.URL + "/"}} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(c.url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

package faultyserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const connTestBody = 8 << 10

// connTarget is an instance served as serve does (so its listener carries
// out connection faults): a fake server, or a sidecar in front of an
// upstream, each answering connTestBody bytes.
type connTarget struct {
	name     string
	url      string
	ctl      *Client
	h        instanceHandler
	accepted *atomic.Int64 // connections accepted so far
}

func connTargets(t *testing.T) []connTarget {
	t.Helper()
	srv, err := New(Config{Service: Fixed(0), Workers: 8, ResponseBytes: connTestBody})
	if err != nil {
		t.Fatal(err)
	}
	surl, sacc := serveCounting(t, srv)
	body := strings.Repeat("x", connTestBody)
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	})
	sc, err := NewSidecar(SidecarConfig{Upstream: up.ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	curl, cacc := serveCounting(t, sc)
	return []connTarget{
		{"server", surl, &Client{BaseURL: surl}, srv, sacc},
		{"sidecar", curl, &Client{BaseURL: curl}, sc, cacc},
	}
}

// fetch GETs url on c and reads the whole answer.
func fetch(c *http.Client, url string) result {
	return do(context.Background(), c, http.MethodGet, url+"/work", nil)
}

func newClient(timeout time.Duration, keepAlive bool) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
}

// setFault sets f through the control API and clears it at the end.
func (tg connTarget) setFault(t *testing.T, f Fault) {
	t.Helper()
	if err := tg.ctl.SetFault(t.Context(), f); err != nil {
		t.Fatalf("set %s: %v", Describe(f), err)
	}
}

// clearFault clears the fault through the control API, which connection
// faults must leave reachable.
func (tg connTarget) clearFault(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), rawTimeout)
	defer cancel()
	if err := tg.ctl.ClearFault(ctx); err != nil {
		t.Fatalf("clear fault: %v", err)
	}
}

func wantOK(t *testing.T, r result, what string) {
	t.Helper()
	if r.err != nil || r.status != 200 || len(r.body) != connTestBody {
		t.Fatalf("%s: status %d, %d bytes, error %v; want 200 with %d bytes", what, r.status, len(r.body), r.err, connTestBody)
	}
}

func TestConnFaultBandwidth(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			tg.setFault(t, Bandwidth{Rate: 16 << 10})
			r := fetch(newClient(rawTimeout, false), tg.url)
			wantOK(t, r, "under bandwidth")
			// 8 KiB at 16 KiB/s: half a second for the answer alone.
			if r.took < 350*time.Millisecond {
				t.Errorf("8 KiB at 16 KiB/s took %v, want at least 350ms", r.took)
			}
			tg.clearFault(t)
			// That the limit ends with the fault: see
			// TestConnFaultBandwidthCleared.
			wantOK(t, fetch(newClient(rawTimeout, false), tg.url), "after clearing")
		})
	}
}

func TestConnFaultCut(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, then := range []string{CutClose, CutReset} {
				tg.setFault(t, Cut{After: 1 << 10, Then: then, P: 1})
				r := fetch(newClient(rawTimeout, true), tg.url)
				if r.status != 200 || r.err == nil || len(r.body) != 1<<10 {
					t.Fatalf("cut then %s: status %d, %d bytes, error %v; want 200, 1024 bytes and an error", then, r.status, len(r.body), r.err)
				}
				if then == CutClose && !errors.Is(r.err, io.ErrUnexpectedEOF) {
					t.Errorf("cut then close: error %v, want an unexpected EOF", r.err)
				}
				if then == CutReset && !strings.Contains(r.err.Error(), "reset") {
					t.Errorf("cut then reset: error %v, want a reset", r.err)
				}
			}
			tg.clearFault(t)
			wantOK(t, fetch(newClient(rawTimeout, true), tg.url), "after clearing")
		})
	}
}

func TestConnFaultCutH2C(t *testing.T) {
	srv, err := New(Config{Service: Fixed(0), ResponseBytes: connTestBody})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serveForTest(t, srv)
	mustSetFault(t, srv, Cut{After: 1 << 10, Then: CutReset, P: 1})
	c := &http.Client{Transport: h2cTransport(t), Timeout: rawTimeout}
	r := fetch(c, url)
	if r.err == nil || len(r.body) > 1<<10 {
		t.Fatalf("h2c cut: %d bytes, error %v; want at most 1024 and an error", len(r.body), r.err)
	}
	srv.ClearFault()
	wantOK(t, fetch(c, url), "h2c after clearing, on the same connection")
}

func TestConnFaultBlackhole(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			held := newClient(rawTimeout, true)
			wantOK(t, fetch(held, tg.url), "before") // leaves an idle connection
			tg.setFault(t, Blackhole{})
			for _, c := range []*http.Client{held, newClient(time.Second, false)} {
				c.Timeout = 300 * time.Millisecond
				r := fetch(c, tg.url)
				var ne net.Error
				if !errors.As(r.err, &ne) || !ne.Timeout() {
					t.Fatalf("under blackhole: status %d, error %v; want a timeout", r.status, r.err)
				}
			}
			probe := newClient(300*time.Millisecond, false)
			if r := do(t.Context(), probe, http.MethodGet, tg.url+HealthPath, nil); r.err == nil {
				t.Errorf("a health check under blackhole got %d", r.status)
			}
			tg.clearFault(t)
			wantOK(t, fetch(newClient(rawTimeout, false), tg.url), "after clearing")
		})
	}
}

func TestConnFaultBlackholeH2C(t *testing.T) {
	srv, err := New(Config{Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serveForTest(t, srv)
	mustSetFault(t, srv, Blackhole{})
	c := &http.Client{Transport: h2cTransport(t), Timeout: 300 * time.Millisecond}
	if r := fetch(c, url); r.err == nil {
		t.Fatalf("h2c under blackhole: got %d", r.status)
	}
	srv.ClearFault()
	c.Timeout = rawTimeout
	if r := fetch(c, url); r.err != nil || r.status != 200 {
		t.Fatalf("h2c after clearing: %d %v", r.status, r.err)
	}
}

func TestConnFaultRefuse(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			open := dialRaw(t, tg.url)
			wantOK(t, open.get(t, "/work"), "before")
			tg.setFault(t, Refuse{})
			r := fetch(newClient(rawTimeout, false), tg.url)
			if r.err == nil {
				t.Fatalf("a new connection under refuse got %d", r.status)
			}
			if ne := net.Error(nil); errors.As(r.err, &ne) && ne.Timeout() {
				t.Errorf("a refused request timed out after %v (%v), want it to fail at once", r.took, r.err)
			}
			wantOK(t, open.get(t, "/work"), "an open connection under refuse")
			tg.clearFault(t)
			wantOK(t, fetch(newClient(rawTimeout, false), tg.url), "after clearing")
		})
	}
}

// rawUntilEOF sends one request asking the server to close the connection
// after its answer, and returns how long until the connection's end.
func rawUntilEOF(t *testing.T, url string) time.Duration {
	t.Helper()
	conn := dialRaw(t, url)
	begin := time.Now()
	conn.send(t, "/work", true)
	if _, r := conn.receive(); r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := conn.r.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer: %v, want EOF", err)
	}
	return time.Since(begin)
}

func TestConnFaultSlowClose(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			tg.setFault(t, SlowClose{Delay: Duration(400 * time.Millisecond)})
			if d := rawUntilEOF(t, tg.url); d < 350*time.Millisecond {
				t.Errorf("under slow-close 400ms the connection ended after %v", d)
			}
			// A delay longer than rawUntilEOF waits, cleared: the
			// connection ends at once.
			tg.setFault(t, SlowClose{Delay: Duration(time.Minute)})
			tg.clearFault(t)
			rawUntilEOF(t, tg.url)
		})
	}
}

// A delayed close happens at once when the instance closes.
func TestConnFaultSlowCloseInstanceClosed(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			tg.setFault(t, SlowClose{Delay: Duration(time.Minute)})
			conn := dialRaw(t, tg.url)
			conn.send(t, "/work", true)
			if _, r := conn.receive(); r.err != nil || r.status != 200 {
				t.Fatalf("under slow-close: %d %v", r.status, r.err)
			}
			if quiet, err := conn.silent(300 * time.Millisecond); !quiet {
				t.Fatalf("under slow-close the connection did not wait: %v", err)
			}
			tg.h.Close()
			_ = conn.SetReadDeadline(time.Now().Add(rawTimeout))
			if _, err := conn.r.ReadByte(); err != io.EOF {
				t.Fatalf("after the instance closed: %v, want EOF", err)
			}
		})
	}
}

func TestConnFaultLatency(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			tg.setFault(t, Latency{Per: PerConnection, Value: Duration(300 * time.Millisecond)})
			conn := dialRaw(t, tg.url)
			r := conn.get(t, "/work")
			wantOK(t, r, "per connection, first")
			if r.took < 290*time.Millisecond {
				t.Errorf("per connection: the first request took %v, want >= 300ms", r.took)
			}
			// The connection is open: a latency far longer than
			// rawTimeout does not delay it again.
			tg.setFault(t, Latency{Per: PerConnection, Value: Duration(time.Minute)})
			wantOK(t, conn.get(t, "/work"), "per connection, second on the same connection")
			// A new connection waits, until the fault is cleared.
			slow := dialRaw(t, tg.url)
			slow.send(t, "/work", false)
			if quiet, err := slow.silent(300 * time.Millisecond); !quiet {
				t.Fatalf("per connection: a new connection was not held: %v", err)
			}
			tg.clearFault(t)
			if _, r := slow.receive(); r.err != nil || r.status != 200 {
				t.Fatalf("a new connection after clearing: %d %v", r.status, r.err)
			}

			tg.setFault(t, Latency{Per: PerRequest, Value: Duration(150 * time.Millisecond)})
			c := newClient(rawTimeout, true)
			for i := range 2 {
				r := fetch(c, tg.url)
				wantOK(t, r, "per request")
				if r.took < 140*time.Millisecond {
					t.Errorf("per request, request %d: took %v, want >= 150ms", i, r.took)
				}
			}
			tg.clearFault(t)
			wantOK(t, fetch(c, tg.url), "after clearing")
		})
	}
}

func TestConnKind(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"", connUnknown},
		{"GE", connUnknown},
		{"GET /_ch", connUnknown},
		{"GET /_chaos/fault HTTP/1.1", connControl},
		{"DELETE /_chaos/", connControl},
		{"PUT /_chaos/identity", connControl},
		{"GET /work HTTP/1.1", connData},
		{"GET /_chaotic", connData},
		{"PRI * HTTP/2.0\r\n", connData},
		{"PATCH /_chaos/fault", connData},
		{"xxxxxxxxxxxxxxxxxxxxxxxxxxxx", connData},
	}
	for _, tt := range tests {
		if got := connKind([]byte(tt.in)); got != tt.want {
			t.Errorf("connKind(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestConnFaultValidation(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"mode":"bandwidth","rate":0}`, "rate: must be > 0"},
		{`{"mode":"bandwidth","rate":"64KB"}`, `rate: want a size like "64KiB"`},
		{`{"mode":"bandwidth","rate":true}`, "rate: want a size"},
		{`{"mode":"cut","after":-1}`, "after: must be >= 0"},
		{`{"mode":"cut","then":"drop"}`, `then: must be "close" or "reset"`},
		{`{"mode":"cut","p":0}`, "p: must be within (0,1]"},
		{`{"mode":"cut","p":1.5}`, "p: must be within (0,1]"},
		{`{"mode":"blackhole","health_status":500}`, "health_status: unknown parameter"},
		{`{"mode":"refuse","after":1}`, "after: unknown parameter"},
		{`{"mode":"slow-close","delay":"0s"}`, "delay: must be > 0"},
		{`{"mode":"slow-close","delay":5}`, "delay: want a duration"},
		{`{"mode":"latency","per":"packet"}`, `per: must be "request" or "connection"`},
		{`{"mode":"latency","value":"-1ms"}`, "value: must be > 0"},
		{`{"mode":"latency","health_status":99}`, "health_status: must be within"},
	}
	for _, tt := range tests {
		_, err := ParseFault([]byte(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseFault(%s): %v, want an error starting %q", tt.in, err, tt.want)
		}
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"0": 0, "512": 512, "512B": 512, "1KiB": 1024, "1.5KiB": 1536, "64KiB": 64 << 10, "2MiB": 2 << 20, "1GiB": 1 << 30} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "1KB", "1 kib", "x", "NaNKiB", "1e30GiB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
	for b, want := range map[ByteSize]string{0: "0B", 1000: "1000B", 1536: "1536B", 64 << 10: "64KiB", 3 << 20: "3MiB"} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(b), got, want)
		}
	}
}

// The fake server's answer is "ok" padded to the configured size, with its
// Content-Length.
func TestResponseBytes(t *testing.T) {
	in := start(t, Config{Service: Fixed(0), ResponseBytes: 5000})
	r := in.get(t.Context(), "/")
	if r.status != 200 || len(r.body) != 5000 || !strings.HasPrefix(r.body, "ok") || r.header.Get("Content-Length") != "5000" {
		t.Fatalf("status %d, %d bytes, Content-Length %q", r.status, len(r.body), r.header.Get("Content-Length"))
	}
	if _, err := New(Config{Service: Fixed(0), ResponseBytes: MaxResponseBytes + 1}); err == nil || !strings.Contains(err.Error(), "response_bytes: must be within") {
		t.Errorf("an oversized response_bytes: %v", err)
	}
}

// BenchmarkConnWrapper is the cost of carrying out connection faults: GETs
// over one keep-alive loopback connection to a server whose listener wraps
// its connections (as every served instance's does), with no fault set,
// against the same server on the bare listener, in the same run.
func BenchmarkConnWrapper(b *testing.B) {
	for _, wrapped := range []bool{false, true} {
		name := "bare"
		if wrapped {
			name = "wrapped"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Config{Workers: 8, Service: Fixed(0)})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			url := "http://" + ln.Addr().String() + "/"
			if wrapped {
				ln = s.Listener(ln)
			}
			hs := &http.Server{Handler: s, ConnContext: ConnContext}
			go func() { _ = hs.Serve(ln) }()
			defer func() { s.Close(); _ = hs.Close() }()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

package lbproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/transport"
)

func TestProxyServer(t *testing.T) {
	// Backend 0 streams two chunks with a pause; backend 1 waits for its
	// client to go away and reports it.
	release := make(chan struct{})
	cancelled := make(chan struct{}, 1)
	b0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Lbchaos-Instance", "0")
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second\n")
	}))
	defer b0.Close()
	b1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		cancelled <- struct{}{}
	}))
	defer b1.Close()
	u0, _ := url.Parse(b0.URL)
	u1, _ := url.Parse(b1.URL)
	var log strings.Builder
	p, err := New(Config{Strategy: "round-robin", Backends: []*url.URL{u0, u1}, Timeout: 10 * time.Second, AccessLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()

	// Round robin: the first request goes to backend 0, which streams.
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/x", nil)
	req.Header.Set(transport.SeqHeader, "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get(transport.UpstreamHeader); got != "0" {
		t.Errorf("%s = %q, want 0", transport.UpstreamHeader, got)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk %q, %v: want it before the backend writes the second", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "second\n" {
		t.Errorf("rest %q", rest)
	}

	// The second goes to backend 1; cancelling the client cancels it there.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, front.URL+"/y", nil)
	req.Header.Set(transport.SeqHeader, "8")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend never saw the client's cancellation")
	}
	<-errc

	// Stats and the access log.
	deadline := time.Now().Add(5 * time.Second)
	var stats struct {
		Strategy string         `json:"strategy"`
		Backends []BackendStats `json:"backends"`
	}
	for {
		resp, err := http.Get(front.URL + "/_lbchaos/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&stats)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if stats.Backends[1].Requests == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stats.Strategy != "round-robin" || len(stats.Backends) != 2 ||
		stats.Backends[0].Requests != 1 || stats.Backends[0].Errors != 0 ||
		stats.Backends[1].Requests != 1 || stats.Backends[1].Errors != 1 || stats.Backends[0].InFlight+stats.Backends[1].InFlight != 0 {
		t.Errorf("stats %+v", stats)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || lines[0] != "7 0 200" || !strings.HasPrefix(lines[1], "8 1 ") {
		t.Errorf("access log %q, want \"7 0 200\" and \"8 1 ...\"", lines)
	}
}

// A backend that dies in the middle of a chunked answer: the client sees
// the answer broken (not complete and short), and the proxy counts an
// error for that backend.
func TestProxyBackendDiesMidBody(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	defer b.Close()
	u, _ := url.Parse(b.URL)
	p, err := New(Config{Strategy: "round-robin", Backends: []*url.URL{u}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	front := httptest.NewServer(p)
	defer front.Close()
	resp, err := http.Get(front.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("body %q read without error: the client must see the answer cut short", body)
	}
	if string(body) != "partial\n" {
		t.Errorf("body %q before the error, want the backend's first chunk", body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.errors[0].Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.errors[0].Load(); got != 1 {
		t.Errorf("errors of backend 0: %d, want 1", got)
	}
}

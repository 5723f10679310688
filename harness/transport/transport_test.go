package transport

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend answers status after delay, naming itself and its load.
func backend(t *testing.T, id, status int, delay time.Duration) *url.URL {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set(faultyserver.InstanceHeader, strconv.Itoa(id))
		w.Header().Set(faultyserver.LoadHeader, "3")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return u
}

// newRoundRobin is a plain round robin over n instances.
func newRoundRobin(t *testing.T, n int) *strategies.Balancer {
	t.Helper()
	lb, err := strategies.New("round-robin", strategies.Env{N: n, Clock: strategies.SystemClock{}, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return lb
}

func send(t *testing.T, b *Client, seq int) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://lbchaos-backend/", nil)
	req.Header.Set(SeqHeader, strconv.Itoa(seq))
	resp, err := b.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// TestAttribution: every request is recorded under its sequence number with
// the instance it went to, answered or not, and the in-flight count returns
// to zero once each body is read or the request fails.
func TestAttribution(t *testing.T) {
	ok := backend(t, 0, 200, 0)
	failing := backend(t, 1, 503, 0)
	slow := backend(t, 2, 200, time.Second)
	lb := newRoundRobin(t, 3)
	b := NewClient([]*strategies.Balancer{lb}, []*url.URL{ok, failing, slow}, 100*time.Millisecond, 0)
	defer b.CloseIdleConnections()

	want := []struct {
		status  int
		timeout bool
	}{{200, false}, {503, false}, {0, true}}
	for seq, w := range want {
		resp, err := send(t, b, seq)
		switch {
		case w.timeout && err == nil:
			t.Errorf("request %d: answered %d, want a timeout", seq, resp.StatusCode)
		case !w.timeout && (err != nil || resp.StatusCode != w.status):
			t.Errorf("request %d: %v, want status %d", seq, err, w.status)
		}
		rt, routed := b.Take(uint64(seq))
		if !routed || rt.Instance != seq || rt.Timeout.Load() != w.timeout || rt.Aborted.Load() {
			t.Errorf("request %d: routed %v to %d, timeout %v", seq, routed, rt.Instance, rt.Timeout.Load())
		}
		if _, again := b.Take(uint64(seq)); again {
			t.Errorf("request %d: its route was taken twice", seq)
		}
	}
	if n := b.InFlight(); n != 0 {
		t.Errorf("in flight %d after every request ended", n)
	}
	if n := lb.InFlight(); n[0]+n[1]+n[2] != 0 {
		t.Errorf("the strategy sees %v in flight: a done callback was lost", n)
	}
}

// TestNoHost: with every instance ejected the request fails at once with
// ErrNoHost, is routed to no instance, and is not sent.
func TestNoHost(t *testing.T) {
	u := backend(t, 0, 503, 0)
	lb, err := strategies.New("round-robin+eject(consecutive=1,max=1)", strategies.Env{N: 1, Clock: strategies.SystemClock{}, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	b := NewClient([]*strategies.Balancer{lb}, []*url.URL{u}, time.Second, 0)
	defer b.CloseIdleConnections()
	if _, err := send(t, b, 0); err != nil {
		t.Fatal(err)
	}
	_, err = send(t, b, 1)
	if !errors.Is(err, ErrNoHost) {
		t.Fatalf("err %v, want ErrNoHost", err)
	}
	if rt, routed := b.Take(1); !routed || rt.Instance != strategies.NoHost {
		t.Errorf("routed %v to %d, want NoHost", routed, rt.Instance)
	}
}

// TestAbort: Abort cancels the requests in flight, which are marked
// aborted rather than timed out.
func TestAbort(t *testing.T) {
	u := backend(t, 0, 200, 5*time.Second)
	b := NewClient([]*strategies.Balancer{newRoundRobin(t, 1)}, []*url.URL{u}, 10*time.Second, 0)
	defer b.Close()
	time.AfterFunc(50*time.Millisecond, b.Abort)
	if _, err := send(t, b, 0); err == nil {
		t.Fatal("answered after the run was cancelled")
	}
	rt, _ := b.Take(0)
	if !rt.Aborted.Load() || rt.Timeout.Load() {
		t.Errorf("aborted %v, timeout %v; want an abort", rt.Aborted.Load(), rt.Timeout.Load())
	}
}

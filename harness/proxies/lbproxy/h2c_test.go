package lbproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// lineWriter sends each write to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

// TestServeTakesH2C: `lbchaos proxy` accepts HTTP/2 over cleartext from a
// client of protocol h2c (transport.H2C) and balances its streams per
// request: round robin over two backends, half each, on 2 connections.
func TestServeTakesH2C(t *testing.T) {
	var backends []string
	for id := range 2 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(faultyserver.InstanceHeader, strconv.Itoa(id))
		}))
		defer s.Close()
		backends = append(backends, s.URL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logw := make(lineWriter, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Flags{Listen: "127.0.0.1:0", Strategy: "round-robin", Backends: backends, Timeout: 5 * time.Second, Seed: 1}, logw)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	m := regexp.MustCompile(`on (http://[0-9.:]+)`).FindStringSubmatch(<-logw)
	if m == nil {
		t.Fatal("no address in the proxy's start line")
	}
	front, _ := url.Parse(m[1])
	client := transport.NewProxyClient(front, func(string) (int, bool) { return -1, false }, 2, 5*time.Second, 0, transport.H2C(2))
	defer client.Close()
	per := map[int]int{}
	for seq := range 20 {
		req, _ := http.NewRequest(http.MethodGet, "http://lbchaos-backend/", nil)
		req.Header.Set(transport.SeqHeader, strconv.Itoa(seq))
		resp, err := client.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", seq, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s %d, want HTTP/2 200", seq, resp.Proto, resp.StatusCode)
		}
		rt, _ := client.Take(uint64(seq))
		per[rt.Instance]++
	}
	if per[0] != 10 || per[1] != 10 {
		t.Errorf("requests per backend %v, want 10 each", per)
	}
}

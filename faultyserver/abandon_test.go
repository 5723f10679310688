package faultyserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// With KeepAbandoned, requests whose client went away are still served;
// a Reset (the harness's, between two measurements) ends them, so that a
// backlog nobody waits for does not slow the next measurement down. A
// request whose client still waits is not touched by the Reset.
func TestResetEndsAbandonedWork(t *testing.T) {
	s, err := New(Config{ID: 0, Workers: 1, Service: Fixed(300 * time.Millisecond), KeepAbandoned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()

	send := func(ctx context.Context) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// Five requests abandoned after 50 ms: one holds the worker, four queue.
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		go func() { defer cancel(); _, _ = send(ctx) }()
	}
	time.Sleep(150 * time.Millisecond)
	if st := s.Stats(); st.InFlight+st.Queued != 5 {
		t.Fatalf("before the reset: %d in flight, %d queued; want the 5 abandoned requests kept", st.InFlight, st.Queued)
	}
	s.Reset()
	deadline := time.Now().Add(2 * time.Second)
	for st := s.Stats(); st.InFlight+st.Queued > 0; st = s.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("after the reset: %d in flight, %d queued; want the abandoned work ended", st.InFlight, st.Queued)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A request whose client waits is served in full, reset or not.
	start := time.Now()
	done := make(chan int, 1)
	go func() { code, _ := send(context.Background()); done <- code }()
	time.Sleep(50 * time.Millisecond)
	s.Reset()
	if code := <-done; code != http.StatusOK || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a waiting request across a reset: status %d after %v; want 200 after its 300 ms", code, time.Since(start))
	}
}

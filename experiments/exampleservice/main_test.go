package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQueuesOnItsWorkers: with one worker of 50 ms, three requests sent
// together finish about 50, 100 and 150 ms later: they wait in line.
func TestQueuesOnItsWorkers(t *testing.T) {
	srv := httptest.NewServer(newService(1, 50*time.Millisecond))
	defer srv.Close()
	var wg sync.WaitGroup
	took := make([]time.Duration, 3)
	start := time.Now()
	for i := range took {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	var last time.Duration
	for _, d := range took {
		last = max(last, d)
	}
	if last < 140*time.Millisecond {
		t.Errorf("three requests on one 50 ms worker all done in %v: they did not queue", last)
	}
}

// TestCountsWhatArrived: /stats counts requests and body bytes per method
// and path.
func TestCountsWhatArrived(t *testing.T) {
	srv := httptest.NewServer(newService(4, 0))
	defer srv.Close()
	send := func(method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	send("POST", "/orders", `{"a":1}`)
	send("POST", "/orders", `{"b":22}`)
	send("GET", "/items", "")
	resp, err := http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]count
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]count{"POST /orders": {2, 15}, "GET /items": {1, 0}}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("stats %+v", got)
	}
}

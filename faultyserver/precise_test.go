package faultyserver

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestPreciseNeverEarlyAndIdlesAfterwards(t *testing.T) {
	var p precise
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	var wg sync.WaitGroup
	for range 200 {
		at := start.Add(time.Duration(r.IntN(3000)) * time.Microsecond)
		ch := p.at(at)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ch
			now := time.Now()
			if now.Before(at) {
				t.Errorf("woke %v early", at.Sub(now))
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Second)
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("loop still running with nothing to wait for")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPreciseLateDeadlineFiresAtOnce(t *testing.T) {
	var p precise
	select {
	case <-p.at(time.Now().Add(-time.Second)):
	case <-time.After(time.Second):
		t.Fatal("a past deadline did not fire")
	}
}

// BenchmarkServiceSleepLateness reports how late a 10 ms service sleep ends,
// as the median over b.N sleeps spread over time: compare with
// BenchmarkTimerLateness, the runtime timer the server does not use.
func BenchmarkServiceSleepLateness(b *testing.B) {
	s, err := New(Config{Service: Fixed(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchLateness(b, func(d time.Duration) { _ = s.sleep(context.Background(), d) })
}

// BenchmarkTimerLateness reports the same for a plain time.Timer.
func BenchmarkTimerLateness(b *testing.B) {
	benchLateness(b, func(d time.Duration) { <-time.NewTimer(d).C })
}

func benchLateness(b *testing.B, sleep func(time.Duration)) {
	const d = 10 * time.Millisecond
	const parallel = 40 // about the requests in service at baseline load
	late := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var wg sync.WaitGroup
	per := (b.N + parallel - 1) / parallel
	for g := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(g) * d / parallel)
			for range per {
				t0 := time.Now()
				sleep(d)
				l := time.Since(t0) - d
				mu.Lock()
				late = append(late, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50-late-us")
	b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99-late-us")
	b.ReportMetric(0, "ns/op")
}

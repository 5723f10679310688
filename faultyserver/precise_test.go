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

// The deadline heap gives its entries back earliest first, whatever the
// order of pushes and pops interleaved, ties included, and allocates
// nothing once it has grown.
func TestDeadlineHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Now()
	var h deadlineHeap
	var want []time.Time // what h holds, sorted
	for range 5000 {
		if len(h) == 0 || r.IntN(3) > 0 {
			at := base.Add(time.Duration(r.IntN(50)) * time.Millisecond) // many ties
			h.push(deadlineEntry{at: at})
			i, _ := slices.BinarySearchFunc(want, at, func(a, b time.Time) int { return a.Compare(b) })
			want = slices.Insert(want, i, at)
			continue
		}
		if got := h.pop().at; !got.Equal(want[0]) {
			t.Fatalf("pop gave %v, want the earliest, %v", got.Sub(base), want[0].Sub(base))
		}
		want = want[1:]
	}
	for len(h) > 0 {
		if got := h.pop().at; !got.Equal(want[0]) {
			t.Fatalf("draining: pop gave %v, want %v", got.Sub(base), want[0].Sub(base))
		}
		want = want[1:]
	}
	ch := make(chan struct{})
	if n := testing.AllocsPerRun(100, func() {
		h.push(deadlineEntry{at: base, ch: ch})
		h.pop()
	}); n != 0 {
		t.Errorf("push and pop: %v allocations, want 0", n)
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

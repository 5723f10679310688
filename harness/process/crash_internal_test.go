package process

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// TestWatch: panics before Watch are reported when it begins; a
// handler's panics are reported at most once a second per instance, the
// ones in between counted in the next; a fatal panic stops its instance
// (its connections are refused); after stop nothing is reported.
func TestWatch(t *testing.T) {
	fl, err := Provider{}.Start(context.Background(), fleet.Spec{
		Instances: experiments.Instances{Count: 2, Workers: 2, Service: faultyserver.Fixed(time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	f := fl.(*processFleet)
	handler := faultyserver.Panic{Where: "handler of GET /", Value: "nil pointer", Effect: "the request was aborted"}
	for range 3 {
		f.panicked(0, handler)
	}
	var (
		mu  sync.Mutex
		got []fleet.Crash
	)
	stop, err := f.Watch(func(c fleet.Crash) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := f.Watch(func(fleet.Crash) {}); err == nil {
		t.Error("a second Watch was accepted")
	}
	time.Sleep(panicEvery + 50*time.Millisecond)
	f.panicked(0, handler)
	f.panicked(1, faultyserver.Panic{Where: "the load window", Value: "index out of range", Fatal: true, Effect: "the instance stopped serving"})
	stop()
	f.panicked(1, faultyserver.Panic{Where: "after stop", Value: "late", Fatal: true})

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("reported %+v, want 3 crashes", got)
	}
	if c := got[0]; c.Instance != 0 || c.Fatal || !strings.Contains(c.Detail, "panic in handler of GET /: nil pointer; the request was aborted") || strings.Contains(c.Detail, "more") {
		t.Errorf("first: %+v", c)
	}
	if c := got[1]; c.Instance != 0 || !strings.Contains(c.Detail, "(and 2 more panics since the last one reported)") {
		t.Errorf("second: %+v", c)
	}
	if c := got[2]; c.Instance != 1 || !c.Fatal || !strings.Contains(c.Detail, "index out of range; the instance stopped serving") {
		t.Errorf("third: %+v", c)
	}
	if err := f.Backends()[1].Control.Healthy(t.Context()); err == nil {
		t.Error("instance 1 still answers after its fatal panic")
	}
	if err := f.Backends()[0].Control.Healthy(t.Context()); err != nil {
		t.Errorf("instance 0 stopped after its handlers' panics: %v", err)
	}
}

package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAddNMatchesAdd: adding each second's outcomes in runs of equal ones
// (AddN), in another order, collects what adding them one by one collects:
// the same summary, timeline and per-second percentiles, late results and
// unrouted requests included.
func TestAddNMatchesAdd(t *testing.T) {
	const instances = 3
	one := NewCollector(instances, 4*time.Second, time.Second, 50*time.Millisecond)
	runs := NewCollector(instances, 4*time.Second, time.Second, 50*time.Millisecond)
	rng := rand.New(rand.NewPCG(1, 2))
	var pending []Outcome
	flush := func() {
		// Equal outcomes gathered, in reverse order.
		counts := map[Outcome]int64{}
		var order []Outcome
		for i := len(pending) - 1; i >= 0; i-- {
			o := pending[i]
			if counts[o] == 0 {
				order = append(order, o)
			}
			counts[o]++
		}
		for _, o := range order {
			runs.AddN(o, counts[o])
		}
		pending = pending[:0]
	}
	for ms := range 8000 {
		now := time.Duration(ms) * time.Millisecond
		if now%time.Second == 0 {
			flush()
			one.Sweep(now)
			runs.Sweep(now)
		}
		o := Outcome{
			Instance: rng.IntN(instances+1) - 1,
			SentAt:   now - time.Duration(rng.IntN(3000))*time.Millisecond,
			Latency:  time.Duration(10+rng.IntN(3)*40) * time.Millisecond,
			Success:  rng.IntN(4) > 0,
			Timeout:  rng.IntN(20) == 0,
		}
		o.SentAt = max(o.SentAt, 0)
		if rng.IntN(2) == 0 {
			o.Key, o.HasKey = uint64(rng.IntN(5)), true
		}
		one.Add(o)
		pending = append(pending, o)
	}
	flush()
	one.Finish()
	runs.Finish()
	if one.late == 0 {
		t.Fatal("no late result: the test does not cover them")
	}
	if one.late != runs.late {
		t.Errorf("late: %d one by one, %d in runs", one.late, runs.late)
	}
	if diff := cmp.Diff(one.Strategy("s", []int{1}), runs.Strategy("s", []int{1})); diff != "" {
		t.Errorf("summary differs (-one by one +in runs):\n%s", diff)
	}
}

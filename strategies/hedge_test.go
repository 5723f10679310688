package strategies

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestHedgeParse(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       HedgeConfig
	}{
		{"defaults", "round-robin+hedge", HedgeConfig{Quantile: 0.95, Max: 2}},
		{"fixed delay", "round-robin+hedge(delay=20ms)", HedgeConfig{Delay: 20 * time.Millisecond, Max: 2}},
		{"p95", "round-robin+hedge(delay=p95)", HedgeConfig{Quantile: 0.95, Max: 2}},
		{"p99.9", "round-robin+hedge(delay=p99.9)", HedgeConfig{Quantile: 0.999, Max: 2}},
		{"p50", "round-robin+hedge(delay=p50,max=3)", HedgeConfig{Quantile: 0.5, Max: 3}},
		{"most attempts", "p2c+hedge(delay=1s,max=10)", HedgeConfig{Delay: time.Second, Max: 10}},
		{"inside another wrapper", "p2c+hedge(max=4)+eject", HedgeConfig{Quantile: 0.95, Max: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.spec)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			var got HedgeConfig
			for _, w := range s.Wrappers {
				if w.Name == "hedge" {
					if got, err = parseHedgeConfig(w.Params); err != nil {
						t.Fatal(err)
					}
				}
			}
			// 99.9 / 100 is 0.9990000000000001 in floats.
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("config of %q (-want +got):\n%s", tc.spec, diff)
			}
		})
	}
}

func TestHedgeParseErrors(t *testing.T) {
	pct := func(v string) string {
		return `hedge: delay: want a duration like 20ms or a percentile p50 to p99.9, got "` + v + `"`
	}
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"p40", "round-robin+hedge(delay=p40)", pct("p40")},
		{"p100", "round-robin+hedge(delay=p100)", pct("p100")},
		{"p99.95", "round-robin+hedge(delay=p99.95)", pct("p99.95")},
		{"p alone", "round-robin+hedge(delay=p)", pct("p")},
		{"pNaN", "round-robin+hedge(delay=pNaN)", pct("pNaN")},
		{"pInf", "round-robin+hedge(delay=pInf)", pct("pInf")},
		{"p95ms", "round-robin+hedge(delay=p95ms)", pct("p95ms")},
		{"negative delay", "round-robin+hedge(delay=-1s)", `hedge: delay: want a duration > 0, got "-1s", or a percentile like p95`},
		{"zero delay", "round-robin+hedge(delay=0s)", `hedge: delay: want a duration > 0, got "0s", or a percentile like p95`},
		{"no unit", "round-robin+hedge(delay=20)", `hedge: delay: want a duration like "5s", got "20", or a percentile like p95`},
		{"max=1", "round-robin+hedge(max=1)", `hedge: max: want an integer >= 2, got "1"`},
		{"max=11", "round-robin+hedge(max=11)", `hedge: max: want at most 10 attempts, got 11`},
		{"max not a number", "round-robin+hedge(max=two)", `hedge: max: want an integer >= 2, got "two"`},
		{"unknown parameter", "round-robin+hedge(after=20ms)", `hedge: unknown parameter "after" (allowed: delay, max)`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, tc.spec, tc.want) })
	}
}

func TestHedgeFixedDelay(t *testing.T) {
	_, p := newPolicy(t, "round-robin+hedge(delay=20ms,max=3)", 3, newFakeClock(), nil)
	if d, ok := p.HedgeDelay(); !ok || d != 20*time.Millisecond {
		t.Fatalf("HedgeDelay() = %v, %v before any attempt; want 20ms, true", d, ok)
	}
	if !p.Hedges() || p.Retries() || p.MaxHedged() != 3 || p.OtherHost() || p.PerTryTimeout() != 0 {
		t.Errorf("Hedges, Retries, MaxHedged, OtherHost, PerTryTimeout = %v, %v, %d, %v, %v; want true, false, 3, false, 0",
			p.Hedges(), p.Retries(), p.MaxHedged(), p.OtherHost(), p.PerTryTimeout())
	}
	// Latencies change nothing.
	for range 500 {
		p.Observe(Outcome{Status: 200, Latency: time.Second})
	}
	if d, ok := p.HedgeDelay(); !ok || d != 20*time.Millisecond {
		t.Errorf("HedgeDelay() = %v, %v after slow attempts; want 20ms, true", d, ok)
	}
	// A hedge-only policy retries nothing, and Start is harmless.
	p.Start()
	if _, ok := p.Retry(fail503, 0, Request{}); ok {
		t.Errorf("a hedge-only policy retried")
	}
	p.Hedged()
	p.Hedged()
	p.HedgeWon()
	if s := p.Stats(); s != (PolicyStats{Hedges: 2, HedgesWon: 1}) {
		t.Errorf("Stats() = %+v, want 2 hedges, 1 won", s)
	}
}

// observeMs reports answered attempts with the given latencies in ms.
func observeMs(p *Policy, ms ...int) {
	for _, m := range ms {
		p.Observe(Outcome{Status: 200, Latency: time.Duration(m) * time.Millisecond})
	}
}

// TestHedgePercentileWarmup: nothing is hedged before 100 answered
// attempts; then the delay is the 95th percentile (nearest rank) of them,
// whatever their order. Unanswered and cancelled attempts do not count.
func TestHedgePercentileWarmup(t *testing.T) {
	_, p := newPolicy(t, "round-robin+hedge(delay=p95)", 3, newFakeClock(), nil)
	ms := make([]int, 100)
	for i := range ms {
		ms[i] = i + 1
	}
	r := newRand(7)
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	for i, m := range ms[:99] {
		observeMs(p, m)
		// Attempts without an answer, or cancelled, in between: ignored.
		p.Observe(Outcome{Err: ErrConnect, Latency: time.Hour})
		p.Observe(Outcome{Err: context.DeadlineExceeded, Timeout: true, Latency: time.Hour})
		p.Observe(Outcome{Status: 200, Cancelled: true, Latency: time.Hour})
		p.Observe(Outcome{Err: context.Canceled, Cancelled: true, Latency: time.Hour})
		if d, ok := p.HedgeDelay(); ok || d != 0 {
			t.Fatalf("after %d answered attempts: HedgeDelay() = %v, %v; want 0, false", i+1, d, ok)
		}
	}
	observeMs(p, ms[99])
	if d, ok := p.HedgeDelay(); !ok || d != 95*time.Millisecond {
		t.Errorf("latencies 1..100ms: HedgeDelay() = %v, %v; want 95ms, true", d, ok)
	}
}

// TestHedgePercentileFailuresCount: an answer that is a failure (a 503)
// is an answered attempt: its latency counts.
func TestHedgePercentileFailuresCount(t *testing.T) {
	_, p := newPolicy(t, "round-robin+hedge", 3, newFakeClock(), nil)
	for i := range 100 {
		p.Observe(Outcome{Status: 503, Latency: time.Duration(i+1) * time.Millisecond})
	}
	if d, ok := p.HedgeDelay(); !ok || d != 95*time.Millisecond {
		t.Errorf("100 answers of 503: HedgeDelay() = %v, %v; want 95ms, true", d, ok)
	}
}

func TestHedgePercentiles(t *testing.T) {
	for _, tc := range []struct {
		delay string
		n     int // latencies 1..n ms
		want  time.Duration
	}{
		{"p50", 100, 50 * time.Millisecond},
		{"p90", 100, 90 * time.Millisecond},
		{"p99", 100, 99 * time.Millisecond},
		{"p99.9", 100, 100 * time.Millisecond},
		{"p95", 1000, 950 * time.Millisecond},
		{"p99.9", 1000, 999 * time.Millisecond},
		{"p99", 200, 198 * time.Millisecond},
	} {
		t.Run(tc.delay, func(t *testing.T) {
			_, p := newPolicy(t, "random+hedge(delay="+tc.delay+")", 3, newFakeClock(), nil)
			for i := range tc.n {
				observeMs(p, tc.n-i) // descending
			}
			if d, ok := p.HedgeDelay(); !ok || d != tc.want {
				t.Errorf("%s of 1..%dms: HedgeDelay() = %v, %v; want %v", tc.delay, tc.n, d, ok, tc.want)
			}
		})
	}
	// Instant answers still give a delay, not "none".
	_, p := newPolicy(t, "random+hedge", 3, newFakeClock(), nil)
	for range 100 {
		p.Observe(Outcome{Status: 200})
	}
	if d, ok := p.HedgeDelay(); !ok || d <= 0 {
		t.Errorf("100 instant answers: HedgeDelay() = %v, %v; want a small positive delay", d, ok)
	}
}

// TestHedgePercentileRefresh: after the warm-up the percentile is
// recomputed every 50 answered attempts, not at each.
func TestHedgePercentileRefresh(t *testing.T) {
	_, p := newPolicy(t, "round-robin+hedge(delay=p95)", 3, newFakeClock(), nil)
	for i := range 100 {
		observeMs(p, i+1)
	}
	for i := range 49 {
		observeMs(p, 1000)
		if d, _ := p.HedgeDelay(); d != 95*time.Millisecond {
			t.Fatalf("%d slow attempts after the warm-up: delay %v, want 95ms until the 50th", i+1, d)
		}
	}
	observeMs(p, 1000)
	// 150 latencies: 1..100ms and 50 of 1s; rank round(0.95 × 150) = 143
	// is among the slow ones.
	if d, _ := p.HedgeDelay(); d != time.Second {
		t.Errorf("after 50 slow attempts: delay %v, want 1s", d)
	}
}

// TestHedgePercentileWindow: only the last 1000 answered attempts count.
func TestHedgePercentileWindow(t *testing.T) {
	_, p := newPolicy(t, "round-robin+hedge(delay=p95)", 3, newFakeClock(), nil)
	for range 1000 {
		observeMs(p, 500)
	}
	for range 900 {
		observeMs(p, 1)
	}
	// The window holds 100 of 500ms and 900 of 1ms: p95 is 500ms.
	if d, _ := p.HedgeDelay(); d != 500*time.Millisecond {
		t.Fatalf("100 slow among the last 1000: delay %v, want 500ms", d)
	}
	for range 100 {
		observeMs(p, 1)
	}
	if d, _ := p.HedgeDelay(); d != time.Millisecond {
		t.Errorf("the last 1000 all 1ms: delay %v, want 1ms", d)
	}
	if h := p.hedge; len(h.lat) != 1000 {
		t.Errorf("%d latencies kept, want 1000", len(h.lat))
	}
}

// nth agrees with a sort for every k, on random values with many ties.
func TestNthAgreesWithSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 300; n += 7 {
		v := make([]time.Duration, n)
		for i := range v {
			v[i] = time.Duration(r.IntN(n/3 + 1))
		}
		sorted := slices.Sorted(slices.Values(v))
		for k := range n {
			w := slices.Clone(v)
			if got := nth(w, k); got != sorted[k] {
				t.Fatalf("n=%d k=%d: nth %v, sort %v", n, k, got, sorted[k])
			}
		}
	}
}

package strategies

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHealthcheckRiseFall(t *testing.T) {
	tests := []struct {
		name       string
		rise, fall int
		probes     string // per probe: + good, - failed
		down       string // per probe: whether the endpoint is down after it (D) or up (u)
		events     []string
	}{
		{"starts up and stays up", 2, 3, "++++", "uuuu", nil},
		{"three failures mark down", 2, 3, "---", "uuD", []string{"down"}},
		{"a success resets the failures", 2, 3, "--+--+--", "uuuuuuuu", nil},
		{"two successes mark up", 2, 3, "---++", "uuDDu", []string{"down", "up"}},
		{"a failure resets the successes", 2, 3, "---+-++", "uuDDDDu", []string{"down", "up"}},
		{"failures while down change nothing", 2, 3, "------++", "uuDDDDDu", []string{"down", "up"}},
		{"down again after fall more failures", 2, 3, "---++---", "uuDDuuuD", []string{"down", "up", "down"}},
		{"the first failure after rise counts from zero", 2, 3, "---++-+--", "uuDDuuuuu", []string{"down", "up"}},
		{"rise 1 fall 1", 1, 1, "-+-+", "DuDu", []string{"down", "up", "down", "up"}},
		{"rise 3", 3, 1, "-++-+++", "DDDDDDu", []string{"down", "up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []Event
			c := newHealthcheck(&steer{t: t, target: -1}, 3, ProbeConfig{}, tt.rise, tt.fall, func(e Event) { events = append(events, e) })
			for i, p := range tt.probes {
				c.ProbeResult(1, p == '+', at(time.Duration(i)*time.Second))
				if got, want := c.down[1], tt.down[i] == 'D'; got != want {
					t.Fatalf("after probe %d (%s): down %v, want %v", i, tt.probes[:i+1], got, want)
				}
				if c.down[0] || c.down[2] {
					t.Fatalf("after probe %d: other endpoints down %v", i, c.down)
				}
			}
			var details []string
			downs := 0
			for _, e := range events {
				if e.Kind != EventProbe || e.Endpoint != 1 {
					t.Errorf("event %+v, want an EventProbe of endpoint 1", e)
				}
				details = append(details, e.Detail)
				if e.Detail == "down" {
					downs++
				}
			}
			if diff := cmp.Diff(tt.events, details); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if c.Ejections() != downs {
				t.Errorf("Ejections() = %d, want %d", c.Ejections(), downs)
			}
		})
	}
}

func TestHealthcheckEventTimes(t *testing.T) {
	var events []Event
	c := newHealthcheck(&steer{t: t, target: -1}, 2, ProbeConfig{}, 2, 2, func(e Event) { events = append(events, e) })
	for i, ok := range []bool{false, false, true, true} {
		c.ProbeResult(0, ok, at(time.Duration(i)*2*time.Second))
	}
	want := []Event{
		{at(2 * time.Second), 0, EventProbe, "down"},
		{at(6 * time.Second), 0, EventProbe, "up"},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestHealthcheckHidesDownHosts(t *testing.T) {
	tests := []struct {
		name  string
		down  []int
		hosts []int
		want  []int // hosts given to the inner Picker, as a set
	}{
		{"none down", nil, seq(5), seq(5)},
		{"one down", []int{2}, seq(5), []int{0, 1, 3, 4}},
		{"first and last down", []int{0, 4}, seq(5), []int{1, 2, 3}},
		{"subset with one down", []int{3}, []int{1, 3, 4}, []int{1, 4}},
		{"every given host down: all passed", []int{1, 3}, []int{1, 3}, []int{1, 3}},
	}
	for _, tt := range tests {
		for order, hosts := range hostOrders(tt.hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				inner := &steer{t: t, target: -1}
				c := newHealthcheck(inner, 5, ProbeConfig{}, 1, 1, nil)
				for _, ep := range tt.down {
					c.ProbeResult(ep, false, epoch0)
				}
				feedPick(c, Request{}, hosts)
				if got := slices.Sorted(slices.Values(inner.hosts)); !slices.Equal(got, tt.want) {
					t.Errorf("inner picker given %v, want %v", inner.hosts, tt.want)
				}
				// The filtered hosts keep the input's order.
				want := slices.DeleteFunc(slices.Clone(hosts), func(h int) bool { return !slices.Contains(tt.want, h) })
				if !slices.Equal(inner.hosts, want) {
					t.Errorf("inner picker given %v, want %v in input order", inner.hosts, want)
				}
				if got := c.Ejected(nil); !slices.Equal(got, tt.down) {
					t.Errorf("Ejected() = %v, want %v", got, tt.down)
				}
			})
		}
	}
}

func TestHealthcheckUpdatesInnerHosts(t *testing.T) {
	// The inner Picker hears of the hosts it is given exactly when they
	// change: when an endpoint goes down or comes up, when the input
	// changes, and not for a change undone before the next pick.
	inner := &steer{t: t, target: -1}
	c := newHealthcheck(inner, 6, ProbeConfig{}, 1, 1, nil)
	steps := []struct {
		name    string
		probes  map[int]bool
		hosts   []int
		want    []int
		updates int // UpdateHosts calls so far
	}{
		{"2 down", map[int]bool{2: false}, seq(6), []int{0, 1, 3, 4, 5}, 1},
		{"nothing changed", nil, seq(6), []int{0, 1, 3, 4, 5}, 1},
		{"4 down", map[int]bool{4: false}, seq(6), []int{0, 1, 3, 5}, 2},
		{"4 up", map[int]bool{4: true}, seq(6), []int{0, 1, 3, 4, 5}, 3},
		{"another input", nil, []int{1, 2, 4}, []int{1, 4}, 4},
		{"every given host down: all passed", map[int]bool{1: false, 4: false}, []int{1, 2, 4}, []int{1, 2, 4}, 5},
		{"1 and 4 up again, 2 still down", map[int]bool{1: true, 4: true}, seq(6), []int{0, 1, 3, 4, 5}, 6},
		{"5 down and up between picks", map[int]bool{5: false}, nil, nil, 6},
		{"5 up before the next pick", map[int]bool{5: true}, seq(6), []int{0, 1, 3, 4, 5}, 6},
		{"every endpoint up", map[int]bool{2: true}, seq(6), seq(6), 7},
	}
	for _, st := range steps {
		for _, ep := range slices.Sorted(maps.Keys(st.probes)) {
			c.ProbeResult(ep, st.probes[ep], epoch0)
		}
		if st.hosts == nil {
			continue
		}
		feedPick(c, Request{}, st.hosts)
		if !slices.Equal(inner.hosts, st.want) || inner.updates != st.updates {
			t.Errorf("%s: inner picker given %v after %d updates; want %v after %d", st.name, inner.hosts, inner.updates, st.want, st.updates)
		}
	}
}

func TestHealthcheckThroughBalancer(t *testing.T) {
	clock := newFakeClock()
	var events []Event
	b, err := New("p2c+healthcheck(interval=1s,timeout=500ms,rise=2,fall=2,path=/ready)", Env{
		N: 4, Rand: newRand(1), Clock: clock,
		Events: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, ok := b.Probes()
	if want := (ProbeConfig{Interval: time.Second, Timeout: 500 * time.Millisecond, Path: "/ready"}); !ok || cfg != want {
		t.Fatalf("Probes() = %+v, %v; want %+v, true", cfg, ok, want)
	}
	picks := func() []int {
		counts := make([]int, 4)
		for range 4000 {
			ep, done := b.Pick(Request{})
			done(ok200)
			counts[ep]++
		}
		return counts
	}
	b.ReportProbe(1, false)
	if c := picks(); c[1] == 0 {
		t.Errorf("after one failed probe (fall 2) endpoint 1 got no picks: %v", c)
	}
	clock.Advance(time.Second)
	b.ReportProbe(1, false)
	if c := picks(); c[1] != 0 || c[0] == 0 || c[2] == 0 || c[3] == 0 {
		t.Errorf("endpoint 1 down: picks %v, want none for 1 and some for the others", c)
	}
	if got := b.Ejected(); !slices.Equal(got, []int{1}) || b.Ejections() != 1 {
		t.Errorf("Ejected() = %v, Ejections() = %d; want [1], 1", got, b.Ejections())
	}
	b.ReportProbe(1, true)
	if c := picks(); c[1] != 0 {
		t.Errorf("after one good probe (rise 2) endpoint 1 got %d picks", c[1])
	}
	clock.Advance(time.Second)
	b.ReportProbe(1, true)
	if c := picks(); c[1] < 800 {
		t.Errorf("endpoint 1 up again: picks %v, want about 1000 for it", c)
	}
	if got := b.Ejected(); len(got) != 0 {
		t.Errorf("Ejected() = %v, want none", got)
	}
	want := []Event{
		{at(time.Second), 1, EventProbe, "down"},
		{at(2 * time.Second), 1, EventProbe, "up"},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestHealthcheckAllDownThroughBalancer(t *testing.T) {
	b, err := New("round-robin+healthcheck(fall=1)", Env{N: 3, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	for ep := range 3 {
		b.ReportProbe(ep, false)
	}
	var picks []int
	for range 6 {
		ep, done := b.Pick(Request{})
		done(ok200)
		picks = append(picks, ep)
	}
	if want := []int{0, 1, 2, 0, 1, 2}; !slices.Equal(picks, want) {
		t.Errorf("every endpoint down: picks %v, want %v (all passed)", picks, want)
	}
	if got := b.Ejected(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Ejected() = %v, want [0 1 2]", got)
	}
}

func TestHealthcheckParams(t *testing.T) {
	tests := []struct {
		spec string
		want string // error; empty: valid
	}{
		{"p2c+healthcheck", ""},
		{"p2c+healthcheck(interval=5s,timeout=5s,rise=1,fall=1,path=/health/live)", ""},
		{"p2c+healthcheck(timeout=3s)", `healthcheck: timeout: want a duration no longer than interval (2s), got "3s"`},
		{"p2c+healthcheck(interval=0s)", `healthcheck: interval: want a duration > 0, got "0s"`},
		{"p2c+healthcheck(rise=0)", `healthcheck: rise: want an integer >= 1, got "0"`},
		{"p2c+healthcheck(fall=two)", `healthcheck: fall: want an integer >= 1, got "two"`},
		{"p2c+healthcheck(path=healthz)", `healthcheck: path: want an absolute URL path like "/healthz", got "healthz"`},
		{"p2c+healthcheck(path=/a?b)", `healthcheck: path: want an absolute URL path like "/healthz", got "/a?b"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			checkParse(t, tt.spec, tt.want)
		})
	}
	b, err := New("p2c+healthcheck", Env{N: 2, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	want := ProbeConfig{Interval: 2 * time.Second, Timeout: time.Second, Path: "/healthz"}
	if cfg, ok := b.Probes(); !ok || cfg != want {
		t.Errorf("default Probes() = %+v, %v; want %+v", cfg, ok, want)
	}
	if !strings.Contains(b.Spec(), "healthcheck") {
		t.Errorf("Spec() = %q", b.Spec())
	}
}

// TestHealthcheckProperties reports random probes between picks and checks
// that a down host is picked only when every host is down.
func TestHealthcheckProperties(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		script := newRand(seed * 101)
		const n = 5
		b, err := New("p2c+healthcheck(rise=2,fall=2)", Env{N: n, Rand: newRand(seed)})
		if err != nil {
			t.Fatal(err)
		}
		c := b.picker.(*healthcheck)
		for step := range 5000 {
			if script.IntN(4) == 0 {
				ep := script.IntN(n)
				b.ReportProbe(ep, script.IntN(3) > ep%3) // some endpoints fail more
				continue
			}
			ep, done := b.Pick(Request{})
			done(ok200)
			down := c.Ejected(nil)
			if slices.Contains(down, ep) && len(down) < n {
				t.Fatalf("seed %d step %d: picked %d, which is down (down %v)", seed, step, ep, down)
			}
			if !slices.Equal(down, b.Ejected()) {
				t.Fatalf("seed %d step %d: Ejected() = %v, want %v", seed, step, b.Ejected(), down)
			}
		}
		if b.Ejections() == 0 {
			t.Errorf("seed %d: no endpoint ever went down", seed)
		}
	}
}

// TestHealthWrappersConcurrent runs the three wrappers stacked under
// concurrent picks, probes, sweeps and host-set changes, for the race
// detector, and checks that every request is accounted for.
func TestHealthWrappersConcurrent(t *testing.T) {
	clock := newFakeClock()
	const n = 8
	b, err := New("p2c+health(min_requests=5,window=1s,recover=200ms,ramp=200ms,max_middle=1s)+slowstart(window=500ms)+healthcheck(fall=1,rise=1)", Env{N: n, Rand: newRand(3), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := newRand(uint64(g + 100))
			for i := range 2000 {
				switch {
				case g == 0 && i%50 == 0:
					hosts := []int{0, 1, 2, 3}
					if i%100 == 0 {
						hosts = seq(n)
					}
					if err := b.SetHosts(hosts); err != nil {
						t.Error(err)
					}
				case g == 1 && i%10 == 0:
					b.ReportProbe(r.IntN(n), r.IntN(2) == 0)
				case g == 2 && i%10 == 0:
					clock.Advance(10 * time.Millisecond)
					b.Sweep(clock.Now())
				}
				ep, done := b.Pick(Request{})
				o := Outcome{Status: 200, Latency: time.Duration(1+r.IntN(5)) * time.Millisecond}
				if ep == 5 || r.IntN(20) == 0 {
					o.Status = 503
				}
				done(o)
				_ = b.Ejected()
			}
		})
	}
	wg.Wait()
	if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
		t.Errorf("InFlight() after every done = %v, want zeros", got)
	}
}

package strategies

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// updateRecorder is a Picker that records its UpdateHosts calls and picks
// the first host.
type updateRecorder struct {
	updates [][]int
}

func (r *updateRecorder) UpdateHosts(hosts []int) { r.updates = append(r.updates, slices.Clone(hosts)) }

func (r *updateRecorder) Pick(_ Request, hosts []int) (int, func(Outcome)) { return hosts[0], noDone }

func TestHostFeed(t *testing.T) {
	// Each step marks the feed changed or not, then picks from hosts; want
	// is the UpdateHosts call the pick makes first, nil for none.
	steps := []struct {
		name    string
		changed bool
		hosts   []int
		want    []int
	}{
		{"first pick", false, []int{1, 2, 3}, []int{1, 2, 3}},
		{"unchanged", false, []int{1, 2, 3}, nil},
		{"marked, same hosts", true, []int{1, 2, 3}, nil},
		{"marked, a host left", true, []int{1, 3}, []int{1, 3}},
		{"unmarked: the producer vouches for no change", false, []int{1, 3}, nil},
		{"marked, same set in another order", true, []int{3, 1}, []int{3, 1}},
		{"marked, the first hosts again", true, []int{1, 2, 3}, []int{1, 2, 3}},
		{"marked twice before a pick", true, []int{1, 2, 3}, nil},
	}
	rec := &updateRecorder{}
	f := newHostFeed(rec)
	for _, st := range steps {
		if st.changed {
			f.changed()
		}
		before := len(rec.updates)
		hosts := slices.Clone(st.hosts)
		f.sync(hosts)
		ep, done := rec.Pick(Request{}, hosts)
		done(ok200)
		var got []int
		if len(rec.updates) > before {
			got = rec.updates[len(rec.updates)-1]
		}
		if len(rec.updates) > before+1 || !slices.Equal(got, st.want) || ep != st.hosts[0] {
			t.Errorf("%s: picked %d, UpdateHosts calls %v; want %d and the call %v", st.name, ep, rec.updates[before:], st.hosts[0], st.want)
		}
	}
	t.Run("Picker without UpdateHosts", func(t *testing.T) {
		p := &random{rand: newRand(1)}
		f := newHostFeed(p)
		for _, hosts := range [][]int{{4}, {4, 5}, {5}} {
			f.changed()
			f.sync(hosts)
			if ep, _ := p.Pick(Request{}, hosts); !slices.Contains(hosts, ep) {
				t.Errorf("picked %d, not among %v", ep, hosts)
			}
		}
	})
}

// hostChangeRig drives a Balancer of a base strategy inside an ejecting
// wrapper (eject or healthcheck) and, beside it, a reference Balancer of the
// bare base strategy, whose hosts are set with SetHosts to those the wrapper
// lets through, before the pick that lets them through. Both have the same
// seed and get the same requests and outcomes, so they pick alike as long as
// the base strategy inside the wrapper sees each change of its hosts at the
// next pick, as the reference does, and no change that no pick sees.
type hostChangeRig struct {
	t      *testing.T
	clock  *fakeClock
	b, ref *Balancer
	probes bool         // the wrapper is healthcheck: probes eject
	hosts  []int        // given to b, ascending
	out    map[int]bool // ejected or down in b
	keys   *rand.Rand
	picks  int
	held   []func(Outcome)
}

func newHostChangeRig(t *testing.T, base, wrapper string, probes bool, n int, weights []float64) *hostChangeRig {
	t.Helper()
	r := &hostChangeRig{t: t, clock: newFakeClock(), probes: probes, hosts: seq(n), out: map[int]bool{}, keys: newRand(77)}
	var err error
	if r.b, err = New(base+wrapper, Env{N: n, Rand: newRand(5), Clock: r.clock, Weights: weights}); err != nil {
		t.Fatal(err)
	}
	if r.ref, err = New(base, Env{N: n, Rand: newRand(5), Clock: newFakeClock(), Weights: weights}); err != nil {
		t.Fatal(err)
	}
	return r
}

// expected returns the hosts the base strategy inside the wrapper is to
// see: the given ones less those ejected or down.
func (r *hostChangeRig) expected() []int {
	return slices.DeleteFunc(slices.Clone(r.hosts), func(h int) bool { return r.out[h] })
}

// sync gives the reference the expected hosts.
func (r *hostChangeRig) sync() {
	r.t.Helper()
	if err := r.ref.SetHosts(r.expected()); err != nil {
		r.t.Fatal(err)
	}
}

// pick picks with both Balancers for one request with a key; they must
// agree on a host the base strategy may pick.
func (r *hostChangeRig) pick(step string) (ep int, done func(Outcome)) {
	r.t.Helper()
	req := Request{Key: r.keys.Uint64N(1 << 20), HasKey: true}
	ep, d := r.b.Pick(req)
	want, dRef := r.ref.Pick(req)
	r.picks++
	if ep != want || !slices.Contains(r.expected(), ep) {
		r.t.Fatalf("%s, pick %d: picked %d, the reference %d; the hosts are %v", step, r.picks, ep, want, r.expected())
	}
	return ep, func(o Outcome) { d(o); dRef(o) }
}

// burst picks n times, holding every third request open until the end so
// that the loads vary.
func (r *hostChangeRig) burst(step string, n int) {
	r.t.Helper()
	for i := range n {
		_, done := r.pick(step)
		if i%3 == 0 {
			r.held = append(r.held, done)
			continue
		}
		done(ok200)
	}
	for _, done := range r.held {
		done(ok200)
	}
	r.held = nil
}

// eject takes ep out: a failed probe, or picks until one lands on ep, whose
// request fails.
func (r *hostChangeRig) eject(ep int) {
	r.t.Helper()
	if r.probes {
		r.b.ReportProbe(ep, false)
	} else {
		for i := 0; ; i++ {
			if i == 10_000 {
				r.t.Fatalf("no pick landed on %d", ep)
			}
			got, done := r.pick(fmt.Sprintf("ejecting %d", ep))
			if got == ep {
				done(fail503)
				break
			}
			done(ok200)
		}
	}
	if !slices.Contains(r.b.Ejected(), ep) {
		r.t.Fatalf("%d not ejected; ejected %v", ep, r.b.Ejected())
	}
	r.out[ep] = true
}

// readmit brings ep back: a good probe, or the clock moved to the end of its
// ejection, which the next pick applies.
func (r *hostChangeRig) readmit(ep int, at time.Duration) {
	r.t.Helper()
	if r.probes {
		r.b.ReportProbe(ep, true)
	} else {
		r.clock.Advance(epoch0.Add(at).Sub(r.clock.Now()))
	}
	delete(r.out, ep)
}

// holdOn picks until a pick lands on ep and returns that request's done.
func (r *hostChangeRig) holdOn(ep int) func(Outcome) {
	r.t.Helper()
	for range 10_000 {
		got, done := r.pick(fmt.Sprintf("holding a request to %d", ep))
		if got == ep {
			return done
		}
		done(ok200)
	}
	r.t.Fatalf("no pick landed on %d", ep)
	return nil
}

func (r *hostChangeRig) setHosts(hosts []int) {
	r.t.Helper()
	if err := r.b.SetHosts(hosts); err != nil {
		r.t.Fatal(err)
	}
	r.hosts = slices.Sorted(slices.Values(hosts))
}

// TestHostChangesReachNextPick checks, for each strategy that derives state
// from its hosts, that an ejection, a re-admission, a host leaving and one
// joining are seen by the very next pick, and that an ejection undone
// before the next pick is not seen at all.
func TestHostChangesReachNextPick(t *testing.T) {
	weights := []float64{1, 2, 3, 1, 2, 3}
	bases := []struct {
		name, spec string
		weights    []float64
	}{
		{"ring-hash", "ring-hash", nil},
		{"ring-hash weighted", "ring-hash(min_ring=256)", weights},
		{"maglev", "maglev(table=1009)", weights},
		{"key-hash", "key-hash", nil},
		{"bounded-load", "bounded-load(factor=1.1)", weights},
		{"least-request draws", "least-request(choice_count=3)", nil},
		{"least-request full scan", "least-request(full_scan=true)", nil},
		{"least-request schedule", "least-request", weights},
		{"weighted-random", "weighted-random", weights},
		{"weighted-round-robin", "weighted-round-robin", weights},
		{"weighted-round-robin equal weights", "weighted-round-robin", nil},
	}
	wrappers := []struct {
		name, spec string
		probes     bool
	}{
		{"eject", "+eject(consecutive=1,duration=1s,max=1,success_rate=false)", false},
		{"healthcheck", "+healthcheck(rise=1,fall=1)", true},
	}
	for _, base := range bases {
		for _, w := range wrappers {
			t.Run(base.name+"/"+w.name, func(t *testing.T) {
				r := newHostChangeRig(t, base.spec, w.spec, w.probes, 6, base.weights)
				var held func(Outcome)
				steps := []struct {
					name   string
					change func()
				}{
					{"start", func() {}},
					{"2 ejected", func() { r.eject(2) }},
					{"4 ejected", func() { r.clock.Advance(500 * time.Millisecond); r.eject(4) }},
					{"2 re-admitted", func() { r.readmit(2, time.Second) }},
					{"4 re-admitted", func() { r.readmit(4, 1500*time.Millisecond) }},
					{"5 leaves", func() { r.setHosts([]int{0, 1, 2, 3, 4}) }},
					{"5 joins", func() { r.setHosts([]int{5, 4, 3, 2, 1, 0}) }},
					{"only 3 left", func() { r.setHosts([]int{3}) }},
					{"all back", func() { r.setHosts(seq(6)) }},
					{"1 ejected and re-admitted between picks", func() {
						r.eject(1)
						r.readmit(1, r.clock.Now().Sub(epoch0)+time.Second)
					}},
					{"the same hosts again", func() { r.setHosts(seq(6)) }},
					{"0 leaves with a request open", func() {
						held = r.holdOn(0)
						r.setHosts([]int{1, 2, 3, 4, 5})
					}},
					{"0 ejected while it is not given", func() {
						held(fail503)
						if r.probes {
							r.b.ReportProbe(0, false)
						}
						r.out[0] = true
					}},
					{"0 joins while ejected", func() { r.setHosts(seq(6)) }},
					{"0 re-admitted", func() { r.readmit(0, r.clock.Now().Sub(epoch0)+time.Second) }},
				}
				for _, st := range steps {
					st.change()
					r.sync()
					r.burst(st.name, 30)
					if got, want := r.b.Ejected(), slices.Sorted(maps.Keys(r.out)); !slices.Equal(got, want) {
						t.Fatalf("%s: ejected %v, want %v", st.name, got, want)
					}
				}
			})
		}
	}
}

// TestHostChangesEveryOrder gives a scripted sequence of host sets, each in
// ascending, descending and shuffled order, to the strategies whose picks do
// not depend on the order of hosts (the hashes with a key, weighted round
// robin, least-request's schedule) and checks that they pick alike.
func TestHostChangesEveryOrder(t *testing.T) {
	weights := []float64{1, 2, 3, 1, 2, 3, 1, 5}
	specs := []string{"ring-hash", "maglev(table=1009)", "key-hash", "bounded-load(factor=1.1,min_ring=64)", "weighted-round-robin", "least-request"}
	sets := [][]int{seq(8), {0, 1, 2, 4, 5, 6, 7}, {1, 2, 4, 5, 6}, {6}, {0, 3, 6, 7}, seq(8)}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			var want []int
			for _, order := range []string{"ascending", "descending", "shuffled"} {
				env := hashEnv(8, weights)
				p := hashPicker(t, spec, env)
				keys := newRand(3)
				var got []int
				for _, set := range sets {
					hosts := hostOrders(set)[order]
					var held []func(Outcome)
					for i := range 40 {
						ep, done := feedPick(p, Request{Key: keys.Uint64(), HasKey: true}, hosts)
						if !slices.Contains(set, ep) {
							t.Fatalf("%s %v: picked %d", order, hosts, ep)
						}
						got = append(got, ep)
						env.inflight[ep]++
						if i%4 == 0 {
							held = append(held, func(o Outcome) { env.inflight[ep]--; done(o) })
							continue
						}
						env.inflight[ep]--
						done(ok200)
					}
					for _, done := range held {
						done(ok200)
					}
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Errorf("%s order: picks %v, ascending order %v", order, got, want)
				}
			}
		})
	}
}

// TestWeightedRandomSharesAfterChanges checks weighted-random's shares right
// after each change of its hosts, given in three orders.
func TestWeightedRandomSharesAfterChanges(t *testing.T) {
	weights := []float64{1, 2, 3, 1, 2, 6}
	sets := [][]int{seq(6), {0, 1, 3, 4, 5}, {1, 2}, {0, 2, 4, 5}}
	for order := range hostOrders(seq(6)) {
		t.Run(order, func(t *testing.T) {
			w := &weightedRandom{rand: newRand(8), weights: weights}
			for _, set := range sets {
				hosts := hostOrders(set)[order]
				var total float64
				for _, h := range set {
					total += weights[h]
				}
				want := make([]float64, len(set))
				for i, h := range set {
					want[i] = weights[h] / total
				}
				const picks = 30_000
				counts := make([]int, len(set))
				for range picks {
					ep, _ := feedPick(w, Request{}, hosts)
					i := slices.Index(set, ep)
					if i < 0 {
						t.Fatalf("hosts %v: picked %d", hosts, ep)
					}
					counts[i]++
				}
				wtCheckShares(t, counts, want, wtCritical1e6)
			}
		})
	}
}

// TestSlowStartSeesHostChangesAtNextPick checks, through a Balancer with
// slowstart inside eject, that a host re-admitted or joining starts slow at
// the next pick, with that pick's time, and that an ejection undone before
// the next pick does not restart slow start.
func TestSlowStartSeesHostChangesAtNextPick(t *testing.T) {
	clock := newFakeClock()
	b, err := New("round-robin+slowstart(window=10s)+eject(consecutive=1,duration=1s,max=1,success_rate=false)", Env{N: 6, Rand: newRand(2), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s := b.picker.(*ejector).inner.(*slowStart)
	set := func(ids []int) {
		if err := b.SetHosts(ids); err != nil {
			t.Fatal(err)
		}
	}
	// failAt picks until ep comes up and fails its request.
	failAt := func(ep int) {
		for range 12 {
			got, done := b.Pick(Request{})
			if got == ep {
				done(fail503)
				return
			}
			done(ok200)
		}
		t.Fatalf("round robin never picked %d", ep)
	}
	steps := []struct {
		name   string
		change func()
		want   map[int]float64 // hosts in slow start after the next pick
	}{
		{"established", func() {}, map[int]float64{}},
		{"2 ejected", func() { failAt(2) }, map[int]float64{}},
		{"2 re-admitted", func() { clock.Advance(time.Second) }, map[int]float64{2: 0.1}},
		{"5 leaves", func() { set(seq(5)) }, map[int]float64{2: 0.1}},
		{"5 joins 2s later", func() { clock.Advance(2 * time.Second); set(seq(6)) }, map[int]float64{2: 0.2, 5: 0.1}},
		{"3 ejected and re-admitted between picks", func() {
			failAt(3)
			clock.Advance(time.Second)
			b.Sweep(clock.Now())
		}, map[int]float64{2: 0.3, 5: 0.1}},
		{"5s later", func() { clock.Advance(5 * time.Second) }, map[int]float64{2: 0.8, 5: 0.6}},
	}
	for _, st := range steps {
		st.change()
		_, done := b.Pick(Request{})
		done(ok200)
		got := s.inSlowStart()
		if !maps.EqualFunc(got, st.want, func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }) {
			t.Errorf("%s: in slow start %v, want %v", st.name, got, st.want)
		}
	}
}

// TestHealthSeesHostChangesAtNextPick checks that the health wrapper's
// filter follows its hosts: an unhealthy host that leaves and joins again
// is still kept out from the next pick on, and a critical host that joins
// is scaled from the next pick on.
func TestHealthSeesHostChangesAtNextPick(t *testing.T) {
	b, err := New("random+health", Env{N: 6, Rand: newRand(3), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	h := b.picker.(*health)
	h.setLevel(5, levelUnhealthy, epoch0)
	h.setLevel(4, levelCritical, epoch0)
	steps := []struct {
		name     string
		hosts    []int
		never    int     // a host that no pick may land on
		share4   float64 // expected share of host 4's picks, 0 when it is not given
		tolerate float64
	}{
		{"all hosts", seq(6), 5, 0.1 / 5, 0.01},
		{"4 and 5 leave", seq(4), 5, 0, 0},
		{"4 and 5 join", seq(6), 5, 0.1 / 5, 0.01},
		{"only 4 and 5", []int{4, 5}, 5, 1, 0},
	}
	for _, st := range steps {
		if err := b.SetHosts(st.hosts); err != nil {
			t.Fatal(err)
		}
		const picks = 20_000
		n4 := 0
		for i := range picks {
			ep, done := b.Pick(Request{})
			done(ok200)
			if ep == st.never || !slices.Contains(st.hosts, ep) {
				t.Fatalf("%s, pick %d: picked %d; hosts %v, never %d", st.name, i, ep, st.hosts, st.never)
			}
			if ep == 4 {
				n4++
			}
		}
		if got := float64(n4) / picks; got < st.share4-st.tolerate || got > st.share4+st.tolerate {
			t.Errorf("%s: host 4 (critical) got %.4f of the picks, want %.4f ± %.2f", st.name, got, st.share4, st.tolerate)
		}
	}
}

// TestHealthTellsInnerOfHostChanges checks that the hosts kept by the health
// wrapper reach an inner Picker that derives state from them when the given
// hosts change, even when the hosts dropped stay the same.
func TestHealthTellsInnerOfHostChanges(t *testing.T) {
	b, err := New("key-hash+health", Env{N: 6, Rand: newRand(3), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	b.picker.(*health).setLevel(5, levelUnhealthy, epoch0)
	steps := []struct {
		name  string
		hosts []int
		kept  []int // what key-hash ranks keys over
	}{
		{"all hosts, 5 dropped", seq(6), []int{0, 1, 2, 3, 4}},
		{"0 leaves, 5 still dropped", []int{1, 2, 3, 4, 5}, []int{1, 2, 3, 4}},
		{"5 leaves", []int{1, 2, 3, 4}, []int{1, 2, 3, 4}},
		{"0 and 5 join", seq(6), []int{0, 1, 2, 3, 4}},
	}
	for _, st := range steps {
		if err := b.SetHosts(st.hosts); err != nil {
			t.Fatal(err)
		}
		for k := range uint64(20) {
			ep, done := b.Pick(Request{Key: k, HasKey: true})
			done(ok200)
			if want := st.kept[k%uint64(len(st.kept))]; ep != want {
				t.Fatalf("%s, key %d: picked %d, want %d", st.name, k, ep, want)
			}
		}
	}
}

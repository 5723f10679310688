package strategies

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// handRing returns a boundedLoad over a hand-built ring for hosts with the
// given weights (by id) and loads, as its state would be after a build.
func handRing(factor float64, hashes []uint64, owners []int32, hosts []int, weights []float64, inflight []int64) *boundedLoad {
	p := &boundedLoad{
		weights:  weights,
		inflight: inflight,
		factor:   factor,
		ring:     ring{hashes: hashes, owners: owners},
		equal:    true,
	}
	for _, h := range hosts {
		p.total += inflight[h]
		p.weightSum += weights[h]
		p.equal = p.equal && weights[h] == weights[hosts[0]]
	}
	return p
}

func TestBoundedLoadWalk(t *testing.T) {
	// Ring points 100..600 owned by hosts 0 1 0 2 3 1.
	hashes := []uint64{100, 200, 300, 400, 500, 600}
	owners := []int32{0, 1, 0, 2, 3, 1}
	equal := []float64{1, 1, 1, 1}
	tests := []struct {
		name     string
		factor   float64
		hosts    []int
		weights  []float64
		inflight []int64
		h        uint64 // key hash
		want     int
	}{
		{"home has room", 1, seq(4), equal, []int64{0, 0, 0, 0}, 150, 1},
		// T=1: capacity ceil(2/4) = 1.
		{"home full, next point's owner has room", 1, seq(4), equal, []int64{0, 1, 0, 0}, 150, 0},
		// T=2: capacity 1; host 0's point after host 1 is full too.
		{"walks past full hosts to a distinct one", 1, seq(4), equal, []int64{1, 1, 0, 0}, 150, 2},
		// From host 3's point at 500: 3 and 1 are full, wrap to 0.
		{"wraps around past the last point", 1, seq(4), equal, []int64{0, 1, 1, 1}, 450, 0},
		{"key past the last point starts at the first", 1, seq(4), equal, []int64{0, 0, 0, 0}, 650, 0},
		// T=5: capacity ceil(6/4) = 2; hosts 0 and 1 hold 2.
		{"capacity grows with the total", 1, seq(4), equal, []int64{2, 2, 1, 0}, 50, 2},
		// T=3, factor 1.25: capacity ceil(1.25·4/4) = 2, so host 1 with
		// one request still has room.
		{"factor raises the capacity", 1.25, seq(4), equal, []int64{0, 1, 1, 1}, 150, 1},
		// T=6: with equal weights the capacity would be ceil(7/4) = 2 and
		// host 1 full; weights 1:4:1:2 give it ceil(7·4/8) = 4.
		{"heavier host holds more", 1, seq(4), []float64{1, 4, 1, 2}, []int64{1, 3, 1, 1}, 150, 1},
		// Same loads, from 250: host 0 (point 300) and host 2 (point 400)
		// have capacity ceil(7/8) = 1 and are full; host 3 (point 500) has
		// capacity ceil(7·2/8) = 2 and holds 1.
		{"light hosts fill first", 1, seq(4), []float64{1, 4, 1, 2}, []int64{1, 3, 1, 1}, 250, 3},
		// Hosts 2 and 3 are on the ring but not given; only 0 and 1 count:
		// T=3, capacity ceil(4/2) = 2: host 0 has room.
		{"only given hosts count", 1, []int{0, 1}, equal, []int64{1, 2, 9, 9}, 150, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := handRing(tt.factor, hashes, owners, tt.hosts, tt.weights, tt.inflight)
			if got := p.walk(p.ring.lookup(tt.h)); got != tt.want {
				t.Errorf("walk from hash %d with loads %v = %d, want %d", tt.h, tt.inflight, got, tt.want)
			}
		})
	}
}

func TestBoundedLoadWalkFallback(t *testing.T) {
	// Hosts 2 and 3 have no point on the ring (as when max_ring binds), so
	// the ring's hosts can all be full; the walk then takes the least
	// loaded relative to capacity.
	hashes := []uint64{100, 200, 300}
	owners := []int32{0, 1, 0}
	tests := []struct {
		name     string
		weights  []float64
		inflight []int64
		want     int
	}{
		// T=5, capacity ceil(6/4) = 2: hosts 0 (3) and 1 (2) are full.
		{"least loaded", []float64{1, 1, 1, 1}, []int64{3, 2, 0, 0}, 1},
		{"tie goes to the first on the walk", []float64{1, 1, 1, 1}, []int64{2, 2, 1, 0}, 1},
		// Weights 2:1:1:0.5, T=7: capacities ceil(8·2/4.5) = 4 and
		// ceil(8/4.5) = 2; loads 5 and 2 are 1.25 and 1.0 of them.
		{"weighted: least relative to capacity", []float64{2, 1, 1, 0.5}, []int64{5, 2, 0, 0}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := handRing(1, hashes, owners, seq(4), tt.weights, tt.inflight)
			if got := p.walk(1); got != tt.want {
				t.Errorf("walk with loads %v = %d, want %d", tt.inflight, got, tt.want)
			}
		})
	}
}

// ownersFrom returns the distinct owners of ring points clockwise from the
// first point at or after key's hash, in the order the walk meets them.
func ownersFrom(r *ring, key uint64) []int {
	var out []int
	start := r.lookup(hashKey(key))
	for i := range r.owners {
		o := int(r.owners[(start+i)%len(r.owners)])
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func TestBoundedLoadHotKeyScript(t *testing.T) {
	// One hot key, requests held open: a scripted sequence of picks (">")
	// and dones ("<" with the index of the pick), with the host each pick
	// must reach as its rank on the walk from the key's home (0 = home).
	type step struct {
		pick bool
		rank int // for a pick: the expected host's rank
		done int // for a done: which pick ends
	}
	pick := func(rank int) step { return step{pick: true, rank: rank} }
	done := func(i int) step { return step{done: i} }
	tests := []struct {
		name   string
		spec   string
		n      int
		script []step
	}{
		{
			// Capacity ceil((T+1)/3): 1, 1, 1, 2, 2, 2, 3, ...
			name: "factor 1, three hosts", spec: "bounded-load(factor=1)", n: 3,
			script: []step{
				pick(0), pick(1), pick(2), pick(0), pick(1), pick(2), pick(0),
				// T=7, capacity ceil(8/3) = 3: home holds 3 (picks 0, 3
				// and 6), so pick 7 goes to rank 1.
				pick(1),
				// Picks 0 and 3 end: home holds 1; T=6, capacity
				// ceil(7/3) = 3, and then T=7, capacity 3 again.
				done(0), done(3), pick(0), pick(0),
				// T=8, capacity 3: home and rank 1 hold 3, rank 2 holds 2.
				pick(2),
			},
		},
		{
			// Capacity ceil(1.25(T+1)/4): 1, 1, 1, 2, 2, 2, 3, 3, 3, 4.
			name: "factor 1.25, four hosts", spec: "bounded-load", n: 4,
			script: []step{
				pick(0), pick(1), pick(2), pick(0), pick(1), pick(2), pick(0), pick(1), pick(2),
				// T=9, capacity 4: home holds 3. Rank 3 is never reached.
				pick(0),
				// Picks 1, 4 and 7 (rank 1) end: T=7, capacity
				// ceil(1.25·8/4) = 3; home holds 4 (taken under a higher
				// total) and is full, rank 1 holds nothing.
				done(1), done(4), done(7),
				pick(1),
			},
		},
	}
	const key = 12345
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.spec, Env{N: tt.n, Rand: newRand(1)})
			if err != nil {
				t.Fatal(err)
			}
			// The walk order, from a picker built alike.
			ref := hashPicker(t, tt.spec, hashEnv(tt.n, nil)).(*boundedLoad)
			hashPick(ref, key, seq(tt.n))
			order := ownersFrom(&ref.ring, key)
			if len(order) != tt.n {
				t.Fatalf("walk meets %v, want all %d hosts", order, tt.n)
			}
			want := make([]int64, tt.n)
			var dones []func(Outcome)
			var eps []int
			for i, st := range tt.script {
				if st.pick {
					ep, d := b.Pick(Request{Key: key, HasKey: true})
					if ep != order[st.rank] {
						t.Fatalf("step %d: picked %d (rank %d), want %d (rank %d); loads %v", i, ep, slices.Index(order, ep), order[st.rank], st.rank, want)
					}
					dones, eps = append(dones, d), append(eps, ep)
					want[ep]++
				} else {
					dones[st.done](ok200)
					want[eps[st.done]]--
				}
				if got := b.InFlight(); !slices.Equal(got, want) {
					t.Fatalf("step %d: InFlight() = %v, want %v", i, got, want)
				}
			}
			for _, d := range dones {
				d(ok200)
			}
		})
	}
}

// boundedSim drives a boundedLoad directly, keeping its in-flight counters
// as a Balancer does.
type boundedSim struct {
	p     *boundedLoad
	env   *buildEnv
	open  []func(Outcome)
	openE []int
}

func (s *boundedSim) pick(req Request, hosts []int) int {
	ep, done := feedPick(s.p, req, hosts)
	s.env.inflight[ep]++
	s.open, s.openE = append(s.open, done), append(s.openE, ep)
	return ep
}

func (s *boundedSim) finish(i int) {
	s.env.inflight[s.openE[i]]--
	s.open[i](ok200)
	s.open = slices.Delete(s.open, i, i+1)
	s.openE = slices.Delete(s.openE, i, i+1)
}

// capacityOf is the capacity of host ep for total in flight T over hosts.
func capacityOf(factor float64, T int64, ep int, hosts []int, weights []float64) int64 {
	var sum float64
	for _, h := range hosts {
		sum += weights[h]
	}
	return max(1, int64(math.Ceil(factor*float64(T+1)*weights[ep]/sum-1e-9)))
}

func TestBoundedLoadNeverExceedsCapacity(t *testing.T) {
	tests := []struct {
		name    string
		factor  float64
		weights []float64
	}{
		{"factor 1", 1, nil},
		{"factor 1.25", 1.25, nil},
		{"factor 2", 2, nil},
		{"factor 1.25, weighted", 1.25, []float64{1, 2, 3, 1, 1, 5, 1, 2, 1, 1}},
		{"factor 1, weighted", 1, []float64{0.5, 2, 3, 1, 1, 5, 1, 2, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := hashEnv(10, tt.weights)
			p := hashPicker(t, fmt.Sprintf("bounded-load(factor=%g,min_ring=64)", tt.factor), env).(*boundedLoad)
			sim := &boundedSim{p: p, env: env}
			hosts := seq(10)
			r := newRand(3)
			// 500 picks without dones: half the requests carry one hot
			// key, a tenth carry none.
			for step := range 500 {
				var req Request
				switch x := r.IntN(10); {
				case x < 5:
					req = Request{Key: 7, HasKey: true}
				case x < 9:
					req = Request{Key: r.Uint64(), HasKey: true}
				}
				T := int64(step)
				ep := sim.pick(req, hosts)
				for h := range 10 {
					if c := capacityOf(tt.factor, T, h, hosts, env.weights); env.inflight[h] > c {
						t.Fatalf("step %d (picked %d): host %d holds %d, capacity %d; loads %v", step, ep, h, env.inflight[h], c, env.inflight)
					}
				}
				if p.total != T+1 {
					t.Fatalf("step %d: total %d, want %d", step, p.total, T+1)
				}
			}
			if tt.factor == 1 && tt.weights == nil {
				// Capacity ceil(T/10) at every step: perfectly even.
				if lo, hi := slices.Min(env.inflight), slices.Max(env.inflight); lo != 50 || hi != 50 {
					t.Errorf("loads %v, want 50 each", env.inflight)
				}
			}
		})
	}
}

func TestBoundedLoadTotalTracksInflight(t *testing.T) {
	// A random script of picks, dones and host-set changes; the running
	// total always equals the in-flight sum over the last host set seen,
	// and every pick respects its host's capacity.
	env := hashEnv(8, []float64{1, 2, 1, 1, 3, 1, 1, 2})
	p := hashPicker(t, "bounded-load(min_ring=32)", env).(*boundedLoad)
	sim := &boundedSim{p: p, env: env}
	r := newRand(17)
	hosts := seq(8)
	for step := range 5000 {
		switch x := r.IntN(100); {
		case x < 45:
			var T int64
			for _, h := range hosts {
				T += env.inflight[h]
			}
			req := Request{Key: uint64(r.IntN(20)), HasKey: r.IntN(5) > 0}
			ep := sim.pick(req, hosts)
			if !slices.Contains(hosts, ep) {
				t.Fatalf("step %d: picked %d, not among %v", step, ep, hosts)
			}
			if c := capacityOf(p.factor, T, ep, hosts, env.weights); env.inflight[ep] > c {
				t.Fatalf("step %d: host %d holds %d after the pick, capacity %d", step, ep, env.inflight[ep], c)
			}
		case x < 90 && len(sim.open) > 0:
			sim.finish(r.IntN(len(sim.open)))
		case x >= 97:
			// A new host set: a random non-empty subset, in random order.
			hosts = nil
			for h := range 8 {
				if r.IntN(3) > 0 {
					hosts = append(hosts, h)
				}
			}
			if len(hosts) == 0 {
				hosts = []int{r.IntN(8)}
			}
			r.Shuffle(len(hosts), func(i, j int) { hosts[i], hosts[j] = hosts[j], hosts[i] })
		}
		var sum int64
		for _, h := range p.set.ids {
			sum += env.inflight[h]
		}
		if p.total != sum {
			t.Fatalf("step %d: total %d, in flight to %v sums to %d", step, p.total, p.set.ids, sum)
		}
	}
	for len(sim.open) > 0 {
		sim.finish(0)
	}
	if p.total != 0 {
		t.Errorf("total %d after every done, want 0", p.total)
	}
}

// refBoundedPick is a plain reference of the bounded-load pick: a linear
// scan for the home point, then a walk to the first owner with room.
func refBoundedPick(r *ring, key uint64, factor float64, hosts []int, weights []float64, inflight []int64) int {
	h := hashKey(key)
	home := 0
	for i, x := range r.hashes {
		if x >= h {
			home = i
			break
		}
	}
	var T int64
	for _, x := range hosts {
		T += inflight[x]
	}
	for i := range r.owners {
		o := int(r.owners[(home+i)%len(r.owners)])
		if inflight[o] < capacityOf(factor, T, o, hosts, weights) {
			return o
		}
	}
	return -1
}

func TestBoundedLoadSelectionInEveryOrder(t *testing.T) {
	// Four hosts of eight; every assignment of the loads to the hosts and
	// every order of the hosts slice: picks match the reference and do not
	// depend on the order.
	set := []int{0, 2, 5, 7}
	loads := []int64{0, 1, 2, 3}
	keys := hashKeys(100, 23)
	for _, weighted := range []bool{false, true} {
		var weights []float64
		if weighted {
			weights = []float64{2, 1, 1, 1, 1, 3, 1, 1}
		}
		for _, assign := range hashPerms(seq(4)) {
			inflight := make([]int64, 8)
			for i, h := range set {
				inflight[h] = loads[assign[i]]
			}
			name := fmt.Sprintf("weighted=%v/loads=%v", weighted, inflight)
			t.Run(name, func(t *testing.T) {
				var want []int
				for oi, hosts := range hashPerms(set) {
					env := hashEnv(8, weights)
					copy(env.inflight, inflight)
					p := hashPicker(t, "bounded-load(factor=1)", env).(*boundedLoad)
					for ki, k := range keys {
						ep, done := feedPick(p, Request{Key: k, HasKey: true}, hosts)
						done(ok200) // leaves the state unchanged
						if oi == 0 {
							ref := refBoundedPick(&p.ring, k, 1, set, env.weights, inflight)
							if ep != ref {
								t.Fatalf("hosts %v, key %d: picked %d, reference %d", hosts, k, ep, ref)
							}
							want = append(want, ep)
						} else if ep != want[ki] {
							t.Fatalf("hosts %v, key %d: picked %d, ascending order picked %d", hosts, k, ep, want[ki])
						}
					}
				}
			})
		}
	}
}

func TestBoundedLoadUnkeyedAvoidsFullHosts(t *testing.T) {
	// T=15 over four hosts, factor 1: capacity 4; hosts 0..2 hold 5, so
	// every request without a key goes to host 3, walking from its home.
	env := hashEnv(4, nil)
	copy(env.inflight, []int64{5, 5, 5, 0})
	p := hashPicker(t, "bounded-load(factor=1)", env).(*boundedLoad)
	for range 200 {
		ep, done := feedPick(p, Request{}, seq(4))
		done(ok200)
		if ep != 3 {
			t.Fatalf("picked %d, want host 3, the only one with room", ep)
		}
	}
}

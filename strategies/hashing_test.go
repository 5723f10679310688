package strategies

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

func init() {
	benchSpecs = append(benchSpecs, "ring-hash", "maglev", "bounded-load", "key-hash")
}

// hashEnv is a buildEnv for n endpoints with the given weights (nil: all 1).
func hashEnv(n int, weights []float64) *buildEnv {
	if weights == nil {
		weights = make([]float64, n)
		for i := range weights {
			weights[i] = 1
		}
	}
	return &buildEnv{
		n:        n,
		clock:    newFakeClock(),
		rand:     newRand(1),
		events:   func(Event) {},
		weights:  weights,
		inflight: make([]int64, n),
	}
}

// hashPicker builds the base strategy of spec against env.
func hashPicker(t testing.TB, spec string, env *buildEnv) Picker {
	t.Helper()
	c, err := compile(spec)
	if err != nil {
		t.Fatalf("compile(%q): %v", spec, err)
	}
	return c.base(env)
}

// hashPick picks for key and reports the outcome at once.
func hashPick(p Picker, key uint64, hosts []int) int {
	ep, done := feedPick(p, Request{Key: key, HasKey: true}, hosts)
	done(ok200)
	return ep
}

// hashKeys returns n keys from a seeded generator.
func hashKeys(n int, seed uint64) []uint64 {
	r := newRand(seed)
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	return keys
}

// hashPerms returns every permutation of xs.
func hashPerms(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := slices.Concat(xs[:i], xs[i+1:])
		for _, p := range hashPerms(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// hashSpecs are the hashing strategies, with small rings where that keeps
// the tests fast.
var hashSpecs = []string{"ring-hash", "maglev", "maglev(table=1009)", "bounded-load", "key-hash"}

func TestHashKey(t *testing.T) {
	for _, key := range []uint64{0, 1, 42, math.MaxUint64} {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], key)
		if got, want := hashKey(key), xxhash.Sum64(b[:]); got != want {
			t.Errorf("hashKey(%d) = %#x, want xxHash64 of its little-endian bytes %#x", key, got, want)
		}
	}
	if hashKey(1) == hashKey(2) {
		t.Errorf("hashKey(1) == hashKey(2)")
	}
}

func TestAppendEndpointName(t *testing.T) {
	for _, tt := range []struct {
		id   int
		want string
	}{{0, "endpoint-0"}, {7, "endpoint-7"}, {1234, "endpoint-1234"}} {
		if got := string(appendEndpointName([]byte("x"), tt.id)); got != "x"+tt.want {
			t.Errorf("appendEndpointName(x, %d) = %q, want %q", tt.id, got, "x"+tt.want)
		}
	}
}

func TestHostSet(t *testing.T) {
	// Each step gives the sets of the UpdateHosts calls since the previous
	// build check; rebuild must report a set that differs from the one of
	// the latest build, and only then.
	var s hostSet
	steps := []struct {
		name    string
		updates [][]int
		rebuild bool
		ids     []int
	}{
		{"first set", [][]int{{1, 3, 5}}, true, []int{1, 3, 5}},
		{"no update", nil, false, []int{1, 3, 5}},
		{"same set, other order", [][]int{{5, 1, 3}}, false, []int{1, 3, 5}},
		{"a set that came and went", [][]int{{1, 3}, {1, 3, 5}}, false, []int{1, 3, 5}},
		{"host removed", [][]int{{1, 3}}, true, []int{1, 3}},
		{"host added, unsorted", [][]int{{3, 8, 1}}, true, []int{1, 3, 8}},
		{"two changes, the last counts", [][]int{{8}, {2, 8}}, true, []int{2, 8}},
	}
	for _, st := range steps {
		for _, u := range st.updates {
			s.update(u)
		}
		if got := s.rebuild(); got != st.rebuild {
			t.Errorf("%s: rebuild() = %v, want %v", st.name, got, st.rebuild)
		}
		if !slices.Equal(s.ids, st.ids) || !slices.Equal(s.built, st.ids) {
			t.Errorf("%s: ids %v, built %v; want both %v", st.name, s.ids, s.built, st.ids)
		}
		if s.rebuild() {
			t.Errorf("%s: a second rebuild() without an update reports a change", st.name)
		}
	}
}

func TestRingLookup(t *testing.T) {
	// A hand-built ring of four points owned by endpoints 7, 3, 7, 5.
	r := &ring{hashes: []uint64{100, 200, 300, 400}, owners: []int32{7, 3, 7, 5}}
	tests := []struct {
		name string
		h    uint64
		want int // point index
	}{
		{"zero goes to the first point", 0, 0},
		{"below the first point", 99, 0},
		{"on the first point", 100, 0},
		{"just past the first point", 101, 1},
		{"between the second and third", 250, 2},
		{"on the last point", 400, 3},
		{"past the last point wraps around", 401, 0},
		{"largest hash wraps around", math.MaxUint64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.lookup(tt.h); got != tt.want {
				t.Errorf("lookup(%d) = %d, want %d", tt.h, got, tt.want)
			}
		})
	}
	one := &ring{hashes: []uint64{50}, owners: []int32{2}}
	for _, h := range []uint64{0, 50, 51, math.MaxUint64} {
		if got := one.lookup(h); got != 0 {
			t.Errorf("single point: lookup(%d) = %d, want 0", h, got)
		}
	}
}

func TestRingLookupMatchesLinearScan(t *testing.T) {
	var b ringBuilder
	var r ring
	b.build(&r, seq(7), hashEnv(7, nil).weights, 64, DefaultMaxRing)
	if !slices.IsSorted(r.hashes) {
		t.Fatal("ring hashes are not ascending")
	}
	hs := append(hashKeys(5000, 3), 0, math.MaxUint64)
	hs = append(hs, r.hashes...)
	for _, h := range hs {
		want := 0
		for i, p := range r.hashes {
			if p >= h {
				want = i
				break
			}
		}
		if got := r.lookup(h); got != want {
			t.Fatalf("lookup(%#x) = %d, linear scan finds %d", h, got, want)
		}
	}
}

func TestRingPointCounts(t *testing.T) {
	tests := []struct {
		name             string
		ids              []int
		weights          []float64 // by id; nil: all 1
		minRing, maxRing int
		want             []int
	}{
		{"ten equal hosts", seq(10), nil, 1024, DefaultMaxRing, slices.Repeat([]int{103}, 10)},
		{"nine equal hosts", seq(9), nil, 1024, DefaultMaxRing, slices.Repeat([]int{114}, 9)},
		{"four equal hosts, exact division", seq(4), nil, 1024, DefaultMaxRing, slices.Repeat([]int{256}, 4)},
		{"1000 equal hosts get two points each", seq(1000), nil, 1024, DefaultMaxRing, slices.Repeat([]int{2}, 1000)},
		{"weights 1:2:3:4", seq(4), []float64{1, 2, 3, 4}, 1024, DefaultMaxRing, []int{103, 206, 309, 412}},
		{"weights 4:3:2:1", seq(4), []float64{4, 3, 2, 1}, 1024, DefaultMaxRing, []int{412, 309, 206, 103}},
		{"subset with fractional weights", []int{1, 3}, []float64{9, 0.5, 9, 1.5}, 100, DefaultMaxRing, []int{25, 75}},
		{"max_ring binds", seq(2), []float64{1, 1000}, 1024, 2000, []int{2, 1998}},
		{"max_ring binds and light hosts get none", seq(3), []float64{10000, 1, 1}, 1024, 1000, []int{1000, 0, 0}},
		{"min_ring 1", seq(3), nil, 1, DefaultMaxRing, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			weights := tt.weights
			if weights == nil {
				weights = hashEnv(len(tt.ids), nil).weights
			}
			got := ringPointCounts(nil, tt.ids, weights, tt.minRing, tt.maxRing)
			if !slices.Equal(got, tt.want) {
				t.Errorf("counts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRingBuildPoints(t *testing.T) {
	// Each host's points are the hashes of "endpoint-<id>_<i>", sorted.
	var b ringBuilder
	var r ring
	b.build(&r, []int{2, 5}, []float64{1, 1, 1, 1, 1, 3}, 8, DefaultMaxRing)
	var want []ringPoint
	for id, count := range map[int]int{2: 2, 5: 6} {
		for i := range count {
			want = append(want, ringPoint{xxhash.Sum64String(fmt.Sprintf("endpoint-%d_%d", id, i)), int32(id)})
		}
	}
	slices.SortFunc(want, func(x, y ringPoint) int {
		if x.hash < y.hash {
			return -1
		}
		return 1
	})
	if len(r.hashes) != len(want) {
		t.Fatalf("ring has %d points, want %d", len(r.hashes), len(want))
	}
	for i, p := range want {
		if r.hashes[i] != p.hash || r.owners[i] != p.owner {
			t.Errorf("point %d = (%#x, %d), want (%#x, %d)", i, r.hashes[i], r.owners[i], p.hash, p.owner)
		}
	}
}

func TestHashingParams(t *testing.T) {
	tests := []struct {
		spec string
		want string // error; empty for a valid spec
	}{
		{"ring-hash", ""},
		{"ring-hash(min_ring=1,max_ring=1)", ""},
		{"ring-hash(min_ring=8388608)", ""},
		{"ring-hash(min_ring=0)", `ring-hash: min_ring: want an integer in [1, 8388608], got "0"`},
		{"ring-hash(min_ring=many)", `ring-hash: min_ring: want an integer in [1, 8388608], got "many"`},
		{"ring-hash(max_ring=8388609)", `ring-hash: max_ring: want an integer in [1, 8388608], got "8388609"`},
		{"ring-hash(min_ring=2048,max_ring=1024)", `ring-hash: max_ring: want an integer >= min_ring (2048), got "1024"`},
		{"ring-hash(ring=5)", `ring-hash: unknown parameter "ring" (allowed: min_ring, max_ring)`},
		{"maglev", ""},
		{"maglev(table=7)", ""},
		{"maglev(table=5000011)", ""},
		{"maglev(table=65536)", `maglev: table: want a prime number (Maglev's lookup table size must be prime, e.g. 65537), got "65536"`},
		{"maglev(table=1)", `maglev: table: want an integer in [2, 5000011], got "1"`},
		{"maglev(table=5000012)", `maglev: table: want an integer in [2, 5000011], got "5000012"`},
		{"maglev(table=x)", `maglev: table: want an integer in [2, 5000011], got "x"`},
		{"bounded-load", ""},
		{"bounded-load(factor=1,min_ring=64)", ""},
		{"bounded-load(factor=0.9)", `bounded-load: factor: want a number in [1, 1e+06], got "0.9"`},
		{"bounded-load(factor=NaN)", `bounded-load: factor: want a number in [1, 1e+06], got "NaN"`},
		{"bounded-load(min_ring=0)", `bounded-load: min_ring: want an integer in [1, 8388608], got "0"`},
		{"bounded-load(max_ring=10)", `bounded-load: unknown parameter "max_ring" (allowed: factor, min_ring)`},
		{"key-hash", ""},
		{"key-hash(mod=3)", `key-hash: unknown parameter "mod" (key-hash takes no parameters)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := Parse(tt.spec)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse(%q) = %v, want no error", tt.spec, err)
			case tt.want != "" && err == nil:
				t.Errorf("Parse(%q) succeeded, want error %s", tt.spec, tt.want)
			case tt.want != "" && err.Error() != tt.want:
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.spec, err, tt.want)
			}
		})
	}
}

func TestHashingDeterministic(t *testing.T) {
	// The same key goes to the same host while the hosts do not change,
	// whatever the random source, and two pickers built alike agree.
	keys := hashKeys(2000, 11)
	for _, spec := range hashSpecs {
		t.Run(spec, func(t *testing.T) {
			hosts := []int{0, 2, 3, 5, 6, 9}
			envA, envB := hashEnv(10, nil), hashEnv(10, nil)
			envB.rand = newRand(12345)
			a, b := hashPicker(t, spec, envA), hashPicker(t, spec, envB)
			first := make([]int, len(keys))
			for i, k := range keys {
				first[i] = hashPick(a, k, hosts)
				if !slices.Contains(hosts, first[i]) {
					t.Fatalf("key %d: picked %d, not among %v", k, first[i], hosts)
				}
			}
			for round := range 3 {
				for i, k := range keys {
					if got := hashPick(a, k, hosts); got != first[i] {
						t.Fatalf("round %d, key %d: picked %d, first %d", round, k, got, first[i])
					}
					if got := hashPick(b, k, hosts); got != first[i] {
						t.Fatalf("key %d: second picker picked %d, first %d", k, got, first[i])
					}
				}
			}
		})
	}
}

func TestHashingOrderIndependent(t *testing.T) {
	// The same host set in any order maps every key identically: every
	// permutation of four hosts, and shuffles of larger sets.
	keys := hashKeys(3000, 5)
	sets := map[string][]int{
		"four of eight": {1, 3, 4, 7},
		"all ten":       seq(10),
	}
	for _, spec := range hashSpecs {
		for setName, set := range sets {
			t.Run(spec+"/"+setName, func(t *testing.T) {
				ref := hashPicker(t, spec, hashEnv(10, []float64{1, 2, 1, 3, 1, 1, 2, 1, 1, 4}))
				want := make([]int, len(keys))
				for i, k := range keys {
					want[i] = hashPick(ref, k, set)
				}
				orders := map[string][]int{}
				if len(set) <= 4 {
					for i, p := range hashPerms(set) {
						orders[fmt.Sprintf("perm%02d", i)] = p
					}
				} else {
					orders = hostOrders(set)
				}
				for name, hosts := range orders {
					p := hashPicker(t, spec, hashEnv(10, []float64{1, 2, 1, 3, 1, 1, 2, 1, 1, 4}))
					for i, k := range keys {
						if got := hashPick(p, k, hosts); got != want[i] {
							t.Fatalf("%s %v: key %d picked %d, ascending order picked %d", name, hosts, k, got, want[i])
						}
					}
				}
			})
		}
	}
}

func TestHashingUnkeyedUniform(t *testing.T) {
	// Requests without a key spread uniformly over the given hosts, even
	// with unequal weights. Chi-square critical value for 5 degrees of
	// freedom at p = 0.001; the seed makes the test deterministic.
	for _, spec := range hashSpecs {
		t.Run(spec, func(t *testing.T) {
			hosts := []int{1, 2, 4, 5, 7, 8}
			p := hashPicker(t, spec, hashEnv(10, []float64{1, 5, 1, 1, 1, 2, 1, 1, 9, 1}))
			const picks = 60_000
			counts := make([]int, len(hosts))
			for range picks {
				ep, done := feedPick(p, Request{}, hosts)
				done(ok200)
				i := slices.Index(hosts, ep)
				if i < 0 {
					t.Fatalf("picked %d, not among %v", ep, hosts)
				}
				counts[i]++
			}
			if x := chiSquare(counts, picks); x > chiCritical[5] {
				t.Errorf("counts %v: chi-square %.1f > %.2f", counts, x, chiCritical[5])
			}
		})
	}
}

func TestHashingMovedKeys(t *testing.T) {
	// Removing one of n hosts must move every key of that host, and the
	// consistent hashes should move few others; plain modulo moves most.
	tests := []struct {
		spec     string
		n        int
		removed  int
		maxMoved float64 // bound on the fraction of all keys that move
		minMoved float64
		maxOther float64 // bound on the fraction of keys of remaining hosts that move
	}{
		// Same per-host point count (11) before and after: only the
		// removed host's keys move.
		{"ring-hash", 100, 37, 2.0 / 100, 0, 0},
		// Two points per host: shares vary a lot, so the removed host may
		// hold more than 1/n of the keys; none of the others move.
		{"ring-hash", 1000, 500, 5.0 / 1000, 0, 0},
		// 103 points per host for 10 hosts, 114 for 9: the 99 new points
		// take about 99/1026 of the ring, part of it from other hosts.
		{"ring-hash", 10, 3, 0.25, 0, 0.12},
		{"maglev", 10, 3, 2.0 / 10, 0, 0.02},
		{"maglev", 100, 37, 2.0 / 100, 0, 0.01},
		{"maglev(table=1009)", 10, 3, 2.0 / 10, 0, 0.05},
		{"bounded-load", 100, 37, 2.0 / 100, 0, 0},
		{"key-hash", 10, 3, 1, 0.8, 1},
		{"key-hash", 100, 37, 1, 0.9, 1},
	}
	keys := hashKeys(10_000, 77)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/n=%d", tt.spec, tt.n), func(t *testing.T) {
			before := seq(tt.n)
			after := slices.Delete(seq(tt.n), tt.removed, tt.removed+1)
			p := hashPicker(t, tt.spec, hashEnv(tt.n, nil))
			// All keys on one host set, then all on the other: alternating
			// would rebuild the ring or table at every pick.
			was := make([]int, len(keys))
			for i, k := range keys {
				was[i] = hashPick(p, k, before)
			}
			moved, onRemoved, other, otherMoved := 0, 0, 0, 0
			for i, k := range keys {
				a := was[i]
				b := hashPick(p, k, after)
				if b == tt.removed {
					t.Fatalf("key %d picked the removed host %d", k, b)
				}
				if a != b {
					moved++
				}
				if a == tt.removed {
					onRemoved++
				} else {
					other++
					if a != b {
						otherMoved++
					}
				}
			}
			frac := float64(moved) / float64(len(keys))
			otherFrac := float64(otherMoved) / float64(other)
			t.Logf("moved %.4f of keys (%d on the removed host), %.4f of the others", frac, onRemoved, otherFrac)
			if onRemoved == 0 {
				t.Errorf("no key was on host %d", tt.removed)
			}
			if frac > tt.maxMoved || frac < tt.minMoved {
				t.Errorf("moved %.4f of keys, want in [%.4f, %.4f]", frac, tt.minMoved, tt.maxMoved)
			}
			if otherFrac > tt.maxOther {
				t.Errorf("moved %.4f of the keys of remaining hosts, want <= %.4f", otherFrac, tt.maxOther)
			}
		})
	}
}

func TestHashingThroughBalancer(t *testing.T) {
	// Through a Balancer: a host leaving with SetHosts takes its keys with
	// it, and coming back restores the mapping.
	keys := hashKeys(3000, 21)
	for _, spec := range []string{"ring-hash", "maglev", "bounded-load"} {
		t.Run(spec, func(t *testing.T) {
			b, err := New(spec, Env{N: 100, Rand: newRand(1), Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			pick := func(k uint64) int {
				ep, done := b.Pick(Request{Key: k, HasKey: true})
				done(ok200)
				return ep
			}
			first := make([]int, len(keys))
			for i, k := range keys {
				first[i] = pick(k)
			}
			if err := b.SetHosts(slices.Delete(seq(100), 42, 43)); err != nil {
				t.Fatal(err)
			}
			moved := 0
			for i, k := range keys {
				got := pick(k)
				switch {
				case got == 42:
					t.Fatalf("key %d picked host 42 after it left", k)
				case first[i] == 42:
					moved++
				case got != first[i] && spec != "maglev":
					t.Fatalf("key %d moved from %d to %d though its host stayed", k, first[i], got)
				case got != first[i]:
					moved++
				}
			}
			if moved > 2*len(keys)/100 {
				t.Errorf("%d of %d keys moved, want at most 2%%", moved, len(keys))
			}
			if err := b.SetHosts(seq(100)); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				if got := pick(k); got != first[i] {
					t.Fatalf("key %d picked %d after host 42 came back, at first %d", k, got, first[i])
				}
			}
			if got := b.InFlight(); !slices.Equal(got, make([]int64, 100)) {
				t.Errorf("InFlight() = %v, want zeros", got)
			}
		})
	}
}

// TestHashingWithEjection is a scripted run of each hashing strategy under
// the eject wrapper: a host that fails is ejected and its keys go elsewhere, the keys
// of the other hosts stay, and re-admission restores the mapping.
func TestHashingWithEjection(t *testing.T) {
	keys := hashKeys(500, 8)
	for _, base := range []string{"ring-hash", "maglev", "bounded-load", "key-hash"} {
		spec := base + "+eject(consecutive=3,duration=10s,max=0.5)"
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			var events []Event
			// The wrapper's Detail is its own business; keep time, endpoint
			// and kind.
			b, err := New(spec, Env{N: 6, Rand: newRand(1), Clock: clock, Events: func(e Event) {
				events = append(events, Event{Time: e.Time, Endpoint: e.Endpoint, Kind: e.Kind})
			}})
			if err != nil {
				t.Fatal(err)
			}
			pick := func(k uint64, o Outcome) int {
				ep, done := b.Pick(Request{Key: k, HasKey: true})
				done(o)
				return ep
			}
			home := make([]int, len(keys))
			for i, k := range keys {
				home[i] = pick(k, ok200)
			}
			// Step 1: three failures of the host of keys[0] eject it.
			bad := home[0]
			for range 3 {
				if got := pick(keys[0], fail503); got != bad {
					t.Fatalf("key %d picked %d before ejection, want %d", keys[0], got, bad)
				}
			}
			if got := b.Ejected(); !slices.Equal(got, []int{bad}) {
				t.Fatalf("after three failures Ejected() = %v, want [%d]", got, bad)
			}
			if want := []Event{{epoch0, bad, EventEject, ""}}; !slices.Equal(events, want) {
				t.Fatalf("events = %v, want %v", events, want)
			}
			// Step 2: while ejected, its keys move and (for the consistent
			// hashes) the others stay.
			clock.Advance(9 * time.Second)
			stayed, others := 0, 0
			for i, k := range keys {
				got := pick(k, ok200)
				if got == bad {
					t.Fatalf("key %d picked the ejected host %d", k, bad)
				}
				if home[i] != bad {
					others++
					if got == home[i] {
						stayed++
					}
				}
			}
			if base == "key-hash" {
				if stayed == others {
					t.Errorf("key-hash: every key of the remaining hosts stayed; modulo over 5 hosts should move most")
				}
			} else if stayed < others*9/10 {
				t.Errorf("only %d of %d keys of healthy hosts stayed home", stayed, others)
			}
			// Step 3: at 10s the host is re-admitted and every key goes home.
			clock.Advance(time.Second)
			for i, k := range keys {
				if got := pick(k, ok200); got != home[i] {
					t.Fatalf("after re-admission key %d picked %d, want %d", k, got, home[i])
				}
			}
			if got := b.Ejected(); got != nil {
				t.Errorf("Ejected() after re-admission = %v, want none", got)
			}
			if want := []Event{{epoch0, bad, EventEject, ""}, {epoch0.Add(10 * time.Second), bad, EventReadmit, ""}}; !slices.Equal(events, want) {
				t.Errorf("events = %v, want %v", events, want)
			}
		})
	}
}

func TestHashingPickAllocations(t *testing.T) {
	// A keyed pick allocates nothing beyond the Balancer's pending call
	// and its done.
	for _, spec := range []string{"ring-hash", "maglev", "bounded-load", "key-hash"} {
		t.Run(spec, func(t *testing.T) {
			b, err := New(spec, Env{N: 100, Rand: newRand(1)})
			if err != nil {
				t.Fatal(err)
			}
			var key uint64
			allocs := testing.AllocsPerRun(1000, func() {
				key += 0x9e3779b97f4a7c15
				_, done := b.Pick(Request{Key: key, HasKey: true})
				done(ok200)
			})
			if allocs > 2 {
				t.Errorf("Pick+done: %v allocations, want at most 2", allocs)
			}
		})
	}
}

func TestHashingConcurrent(t *testing.T) {
	// Concurrent picks, dones and host-set changes through a Balancer, for
	// the race detector; every request ends, so nothing stays in flight.
	for _, spec := range []string{"ring-hash", "maglev(table=1009)", "bounded-load", "key-hash", "bounded-load+eject(consecutive=3,duration=1ms,max=0.5)"} {
		t.Run(spec, func(t *testing.T) {
			const n = 8
			clock := newFakeClock()
			b, err := New(spec, Env{N: n, Rand: newRand(2), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					r := newRand(uint64(100 + g))
					var open []func(Outcome)
					for i := range 500 {
						ep, done := b.Pick(Request{Key: uint64(r.IntN(50)), HasKey: r.IntN(4) > 0})
						if ep < 0 || ep >= n {
							t.Errorf("picked %d of %d endpoints", ep, n)
						}
						open = append(open, done)
						if r.IntN(3) > 0 {
							o := ok200
							if ep == 1 {
								o = fail503
							}
							open[0](o)
							open = open[1:]
						}
						if g == 0 && i%50 == 0 {
							hosts := []int{0, 1, 2, 3, 4, 5, 6, 7}
							hosts = slices.Delete(hosts, i/50%n, i/50%n+1)
							if err := b.SetHosts(hosts); err != nil {
								t.Error(err)
							}
							clock.Advance(time.Millisecond)
						}
					}
					for _, done := range open {
						done(ok200)
					}
				})
			}
			wg.Wait()
			if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
				t.Errorf("InFlight() after every done = %v, want zeros", got)
			}
		})
	}
}

func BenchmarkRingBuild(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ids := seq(n)
			weights := hashEnv(n, nil).weights
			var rb ringBuilder
			var r ring
			b.ReportAllocs()
			for b.Loop() {
				rb.build(&r, ids, weights, DefaultMinRing, DefaultMaxRing)
			}
			b.ReportMetric(float64(len(r.hashes)), "points")
		})
	}
}

func TestSortRingPoints(t *testing.T) {
	r := newRand(31)
	for _, n := range []int{0, 1, 2, 3, 17, 1000, 5000} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			points := make([]ringPoint, n)
			for i := range points {
				h := r.Uint64()
				switch r.IntN(4) {
				case 0:
					h &= 0xff // high bits all zero: one large bucket
				case 1:
					if i > 0 {
						h = points[r.IntN(i)].hash // duplicates
					}
				}
				points[i] = ringPoint{hash: h, owner: int32(i)}
			}
			want := slices.Clone(points)
			slices.SortStableFunc(want, func(x, y ringPoint) int {
				switch {
				case x.hash < y.hash:
					return -1
				case x.hash > y.hash:
					return 1
				}
				return 0
			})
			b := ringBuilder{points: points}
			b.sortPoints()
			if !slices.Equal(points, want) {
				t.Errorf("radix sort differs from a stable sort by hash")
			}
		})
	}
	// Equal hashes keep their order.
	same := []ringPoint{{5, 3}, {5, 1}, {5, 2}}
	b := ringBuilder{points: same}
	b.sortPoints()
	if !slices.Equal(same, []ringPoint{{5, 3}, {5, 1}, {5, 2}}) {
		t.Errorf("equal hashes reordered: %v", same)
	}
}

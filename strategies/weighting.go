package strategies

import (
	"math/rand/v2"
	"slices"
)

// weightCacheSize bounds the filtered host slices a weighting keeps per
// input host set.
const weightCacheSize = 32

// weighting scales the traffic of endpoints by a factor in [0, 1] around any
// inner Picker; the slowstart and health wrappers use it.
//
// Mechanism: on each pick, every given host whose factor f is below 1 is
// kept with probability f (one Env.Rand draw per such host; f = 0 drops it
// without a draw), and the inner Picker chooses among the hosts kept. Hosts
// with factor 1 are always kept and cost nothing: with no scaled endpoint,
// filter returns its input unchanged without drawing or allocating. Should
// no given host be kept, the given hosts with a factor above 0 are passed,
// or all of them if every factor is 0, so that hosts at factor 0 (the
// health wrapper's unhealthy level) get traffic only when nothing else can.
//
// For an inner Picker that is uniform among the hosts it is given, a lone
// scaled host among N gets exactly f/N of the picks, f times what it would
// get unscaled (each other host gets (N-f)/(N(N-1)), so the ratio to an
// unscaled host is f(N-1)/(N-f), which tends to f as N grows); with several
// scaled hosts each one's share also depends on how often the others are
// dropped. Behind a hash-based Picker, a key whose home is dropped goes
// where that Picker sends it without the home (the next host on a ring),
// so a scaled host keeps about f of its keys' requests.
//
// Envoy instead scales the host's weight inside its weighted schedulers
// (EDF for round robin and least request), which works only for those;
// filtering works around any Picker, at the price of hiding a scaled host
// entirely from some picks rather than lowering its odds in each.
//
// Draws are made in ascending id order of the scaled endpoints, so the hosts
// kept do not depend on the order of the input. The filtered slice keeps the
// input's order.
//
// The owner gives the input with setInput whenever it changes (from its
// UpdateHosts), and filter reports whether the kept hosts differ from those
// of the previous pick, which the owner passes on to its hostFeed. Each
// distinct set of dropped hosts gets its own filtered slice, cached (at most
// weightCacheSize of them, first in first out) until the input changes. A
// pick whose dropped set is cached allocates nothing; one that is not
// allocates the filtered slice. Behind another wrapper whose output changes
// on most picks, the cache is rebuilt each time: a pass over the input and an
// allocation per pick. The same holds one level down: while some host is
// scaled, the kept set changes on most picks, so an inner Picker that derives
// a structure from its host set and keeps only the last one (ring hash,
// maglev, weighted tables) rebuilds it that often; the uniform and
// load-based Pickers (p2c, least-inflight, round-robin, random) derive
// nothing and pay nothing.
type weighting struct {
	rand   *rand.Rand
	factor []float64 // by endpoint id; 1 when not scaled
	scaled []int     // endpoints with factor < 1, ascending

	// member marks the endpoints of the input: member[ep] == gen.
	member []uint32
	gen    uint32

	// out names the hosts kept on the previous pick: 0 for the input
	// itself, else the id of their entry; fresh marks an input given since
	// that pick.
	out   uint64
	fresh bool

	dropped []int    // scratch: the hosts dropped on this pick, ascending
	mark    []uint32 // scratch for building: mark[ep] == stamp when dropped
	stamp   uint32

	// Filtered slices of the current input by dropped set.
	index   map[uint64]int // hash of the dropped set -> index in entries
	entries []weightEntry
	next    int    // the entry replaced next once entries is full
	lastID  uint64 // of the latest entry made
}

// weightEntry is a filtered slice of the current input; its id, unique
// among all entries ever made, names its dropped set until the input
// changes.
type weightEntry struct {
	id      uint64
	hash    uint64
	dropped []int
	hosts   []int
}

func newWeighting(n int, r *rand.Rand) *weighting {
	w := &weighting{
		rand:   r,
		factor: make([]float64, n),
		member: make([]uint32, n),
		mark:   make([]uint32, n),
		index:  make(map[uint64]int),
	}
	for i := range w.factor {
		w.factor[i] = 1
	}
	return w
}

// set sets the factor of endpoint ep, clamped to [0, 1].
func (w *weighting) set(ep int, f float64) {
	switch {
	case !(f > 0): // also NaN
		f = 0
	case f > 1:
		f = 1
	}
	was := w.factor[ep]
	w.factor[ep] = f
	switch {
	case was == 1 && f < 1:
		i, _ := slices.BinarySearch(w.scaled, ep)
		w.scaled = slices.Insert(w.scaled, i, ep)
	case was < 1 && f == 1:
		if i, ok := slices.BinarySearch(w.scaled, ep); ok {
			w.scaled = slices.Delete(w.scaled, i, i+1)
		}
	}
}

// get returns the factor of endpoint ep.
func (w *weighting) get(ep int) float64 { return w.factor[ep] }

// filter returns the hosts kept for this pick, which must be the input of
// the latest setInput: hosts itself when no host is dropped or when every
// host is. changed reports whether they differ from the hosts kept on the
// previous call.
func (w *weighting) filter(hosts []int) (kept []int, changed bool) {
	if len(w.scaled) == 0 {
		return hosts, w.note(0)
	}
	w.dropped = w.dropped[:0]
	for _, ep := range w.scaled {
		if w.member[ep] != w.gen {
			continue
		}
		if f := w.factor[ep]; f <= 0 || w.rand.Float64() >= f {
			w.dropped = append(w.dropped, ep)
		}
	}
	if len(w.dropped) == len(hosts) {
		// None kept: pass the hosts whose factor is above 0.
		w.dropped = w.dropped[:0]
		for _, ep := range w.scaled {
			if w.member[ep] == w.gen && w.factor[ep] <= 0 {
				w.dropped = append(w.dropped, ep)
			}
		}
	}
	if len(w.dropped) == 0 || len(w.dropped) == len(hosts) {
		return hosts, w.note(0)
	}
	kept, id := w.lookup(hosts)
	return kept, w.note(id)
}

// note records out as the name of the hosts kept on this pick and reports
// whether they differ from those of the previous pick: distinct entries
// hold distinct dropped sets, and an entry's id is never reused.
func (w *weighting) note(out uint64) bool {
	changed := w.fresh || out != w.out
	w.out, w.fresh = out, false
	return changed
}

// setInput makes hosts the current input: it marks its members and forgets
// the filtered slices of the previous input.
func (w *weighting) setInput(hosts []int) {
	w.gen++
	if w.gen == 0 { // wrapped: clear stale marks
		clear(w.member)
		w.gen = 1
	}
	for _, h := range hosts {
		w.member[h] = w.gen
	}
	w.fresh = true
	clear(w.index)
	clear(w.entries) // drop references; the slices themselves are never reused
	w.entries = w.entries[:0]
	w.next = 0
}

// lookup returns the cached filtered slice for w.dropped and the id of its
// entry, building it on a miss.
func (w *weighting) lookup(hosts []int) ([]int, uint64) {
	var hash uint64 = 0x243f6a8885a308d3
	for _, ep := range w.dropped {
		hash = mixWeight(hash ^ uint64(ep))
	}
	i, ok := w.index[hash]
	if ok && slices.Equal(w.entries[i].dropped, w.dropped) {
		return w.entries[i].hosts, w.entries[i].id
	}
	w.lastID++
	e := weightEntry{id: w.lastID, hash: hash, dropped: slices.Clone(w.dropped), hosts: w.build(hosts)}
	switch {
	case ok: // a hash collision: replace the entry
	case len(w.entries) < weightCacheSize:
		i = len(w.entries)
		w.entries = append(w.entries, weightEntry{})
	default:
		i = w.next
		delete(w.index, w.entries[i].hash)
		w.next = (w.next + 1) % weightCacheSize
	}
	w.entries[i] = e
	w.index[hash] = i
	return e.hosts, e.id
}

// build returns a new slice of hosts without w.dropped, in hosts' order.
func (w *weighting) build(hosts []int) []int {
	w.stamp++
	if w.stamp == 0 {
		clear(w.mark)
		w.stamp = 1
	}
	for _, ep := range w.dropped {
		w.mark[ep] = w.stamp
	}
	kept := make([]int, 0, len(hosts)-len(w.dropped))
	for _, h := range hosts {
		if w.mark[h] != w.stamp {
			kept = append(kept, h)
		}
	}
	return kept
}

// mixWeight is SplitMix64's finaliser.
func mixWeight(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

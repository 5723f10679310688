package strategies

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Shared pieces of the hashing strategies (ring-hash, maglev, bounded-load,
// key-hash): the key hash, endpoint names, a cache of the host set, and the
// hash ring of Envoy's ring hash.

// Ring sizes of Envoy's ring hash: the default minimum_ring_size, and the
// default (and largest allowed) maximum_ring_size.
const (
	DefaultMinRing = 1024
	DefaultMaxRing = 8388608
)

// hashKey is the hash of a request key: xxHash64 (Envoy's default hash
// function) of the key's 8 bytes in little-endian order. Envoy hashes the
// header's text instead; the key here is already a number.
func hashKey(key uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], key)
	return xxhash.Sum64(b[:])
}

// appendEndpointName appends "endpoint-<id>", the identity that endpoint id
// hashes by, to dst. A host's position on the ring or in the Maglev table
// depends on this name only, not on the other hosts, so the hosts that stay
// keep their points when others join or leave.
func appendEndpointName(dst []byte, id int) []byte {
	dst = append(dst, "endpoint-"...)
	return strconv.AppendInt(dst, int64(id), 10)
}

// hostSet is the host set of a hashing Picker, as its UpdateHosts gives it,
// and the set its structure (ring, table) was last built for. A Picker that
// needs the structure only for some picks builds it at the first of them
// after a change, so hosts that come and go between such picks cost nothing.
type hostSet struct {
	ids   []int // the current set, ascending
	built []int // the set of the latest build, ascending
	dirty bool  // ids changed since the latest build
}

// update makes hosts, in any order, the current set: O(n), O(n log n) when
// hosts are not ascending.
func (s *hostSet) update(hosts []int) {
	s.ids = append(s.ids[:0], hosts...)
	if !slices.IsSorted(s.ids) {
		slices.Sort(s.ids)
	}
	s.dirty = true
}

// rebuild reports whether the current set differs from that of the latest
// build, and if so records it as built: the caller then builds for ids.
func (s *hostSet) rebuild() bool {
	if !s.dirty {
		return false
	}
	s.dirty = false
	if s.built != nil && slices.Equal(s.ids, s.built) {
		return false
	}
	s.built = append(s.built[:0], s.ids...)
	return true
}

// ring is a hash ring: points sorted by hash, each owned by an endpoint.
// Hashes and owners are kept in separate slices so that the binary search
// touches only the hashes.
type ring struct {
	hashes []uint64 // ascending
	owners []int32  // owners[i] owns the point hashes[i]
}

// lookup returns the index of the first point clockwise from h: the first
// point whose hash is >= h, wrapping around to point 0 past the last one,
// which is Envoy's (ketama's) rule. The ring must not be empty.
func (r *ring) lookup(h uint64) int {
	lo, hi := 0, len(r.hashes)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.hashes[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.hashes) {
		return 0
	}
	return lo
}

// ringPoint is a point of a ring under construction.
type ringPoint struct {
	hash  uint64
	owner int32
}

// ringPointCounts returns how many points each of ids (ascending, weights
// by endpoint id) gets on a ring of at least minRing and at most maxRing
// points, as Envoy's ring hash computes them: with the weights normalised
// to sum to 1, scale = min(ceil(minNorm·minRing)/minNorm, maxRing), where
// minNorm is the least normalised weight, so the lightest host gets at least
// one point unless maxRing binds; then, walking the hosts with running
// sums, each host gets points up to the running target scale·(sum of
// normalised weights so far). Unlike Envoy, the hosts are walked in id order
// (not in the order given) and the targets are compared with a tolerance of
// 1e-6 points, so that rounding error cannot give one of equally weighted
// hosts an extra point at the expense of the next. A host may get no point
// when maxRing binds.
func ringPointCounts(dst []int, ids []int, weights []float64, minRing, maxRing int) []int {
	var total, least float64
	least = math.Inf(1)
	for _, id := range ids {
		total += weights[id]
		least = min(least, weights[id])
	}
	minNorm := least / total
	scale := min(math.Ceil(minNorm*float64(minRing)-1e-6)/minNorm, float64(maxRing))
	dst = dst[:0]
	var cum float64
	made := 0
	for _, id := range ids {
		cum += weights[id]
		target := int(math.Ceil(scale*cum/total - 1e-6))
		target = min(target, maxRing)
		dst = append(dst, max(0, target-made))
		made = max(made, target)
	}
	return dst
}

// ringBuilder builds rings, reusing its buffers between builds.
type ringBuilder struct {
	counts  []int
	points  []ringPoint
	scratch []ringPoint
	buckets []int
	name    []byte
}

// build fills r with the ring for ids (ascending) with weights by endpoint
// id: host id's points are the xxHash64 of "endpoint-<id>_<i>" for i = 0,
// 1, ... (Envoy hashes "<address>_<i>"), sorted by hash; equal hashes are
// ordered by owner so that the ring does not depend on the input order. r's
// slices are reused. For 1000 hosts at the default sizes (2000 points) a
// build takes well under a millisecond (BenchmarkRingBuild).
func (b *ringBuilder) build(r *ring, ids []int, weights []float64, minRing, maxRing int) {
	b.counts = ringPointCounts(b.counts, ids, weights, minRing, maxRing)
	b.points = b.points[:0]
	for k, id := range ids {
		b.name = append(appendEndpointName(b.name[:0], id), '_')
		base := len(b.name)
		for i := range b.counts[k] {
			b.name = strconv.AppendInt(b.name[:base], int64(i), 10)
			b.points = append(b.points, ringPoint{hash: xxhash.Sum64(b.name), owner: int32(id)})
		}
	}
	b.sortPoints()
	r.hashes = r.hashes[:0]
	r.owners = r.owners[:0]
	for _, p := range b.points {
		r.hashes = append(r.hashes, p.hash)
		r.owners = append(r.owners, p.owner)
	}
}

// sortPoints sorts b.points by hash, keeping points with equal hashes in
// their input order. The hashes are uniform, so a bucket sort on their top
// bits (about one point per bucket) followed by an insertion sort of each
// bucket takes linear time, several times faster than a comparison sort;
// a bucket that is large all the same gets a stable comparison sort.
func (b *ringBuilder) sortPoints() {
	points := b.points
	n := len(points)
	if n < 2 {
		return
	}
	k := bits.Len(uint(n - 1)) // 2^k >= n buckets
	shift := uint(64 - k)
	nb := 1 << k
	if cap(b.buckets) < nb {
		b.buckets = make([]int, nb)
	}
	ends := b.buckets[:nb]
	clear(ends)
	for _, p := range points {
		ends[p.hash>>shift]++
	}
	sum := 0
	for j, c := range ends {
		ends[j] = sum // the start of bucket j, until the scatter below
		sum += c
	}
	if cap(b.scratch) < n {
		b.scratch = make([]ringPoint, n)
	}
	out := b.scratch[:n]
	for _, p := range points {
		j := p.hash >> shift
		out[ends[j]] = p
		ends[j]++ // ends at the end of bucket j, the start of bucket j+1
	}
	lo := 0
	for _, hi := range ends {
		bucket := out[lo:hi]
		lo = hi
		if len(bucket) > 16 {
			slices.SortStableFunc(bucket, func(x, y ringPoint) int { return cmp.Compare(x.hash, y.hash) })
			continue
		}
		for i := 1; i < len(bucket); i++ {
			p := bucket[i]
			j := i
			for ; j > 0 && bucket[j-1].hash > p.hash; j-- {
				bucket[j] = bucket[j-1]
			}
			bucket[j] = p
		}
	}
	copy(points, out)
}

// intRangeParam reads an integer in [least, most]; the error names key and
// the range.
func intRangeParam(params map[string]string, key string, def, least, most int) (int, error) {
	n, err := intParam(params, key, def, least)
	if err != nil || n > most {
		return 0, fmt.Errorf("%s: want an integer in [%d, %d], got %q", key, least, most, params[key])
	}
	return n, nil
}

// ringSizeParams reads min_ring and, when maxKey is not empty, the maximum
// ring size under that key, with Envoy's limits: each in [1, 8388608] and
// min_ring <= the maximum. Without maxKey the maximum is 8388608.
func ringSizeParams(params map[string]string, maxKey string) (minRing, maxRing int, err error) {
	if minRing, err = intRangeParam(params, "min_ring", DefaultMinRing, 1, DefaultMaxRing); err != nil {
		return 0, 0, err
	}
	if maxKey == "" {
		return minRing, DefaultMaxRing, nil
	}
	if maxRing, err = intRangeParam(params, maxKey, DefaultMaxRing, 1, DefaultMaxRing); err != nil {
		return 0, 0, err
	}
	if minRing > maxRing {
		return 0, 0, fmt.Errorf("%s: want an integer >= min_ring (%d), got %q", maxKey, minRing, params[maxKey])
	}
	return minRing, maxRing, nil
}

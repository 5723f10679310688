package strategies

import (
	"fmt"
	"math/rand/v2"

	"github.com/cespare/xxhash/v2"
)

// Table sizes of the maglev strategy: Envoy's default table_size, and the
// largest Envoy accepts.
const (
	DefaultMaglevTable = 65537
	MaxMaglevTable     = 5000011
)

func init() {
	registerBase("maglev", []string{"table"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		m, err := intRangeParam(params, "table", DefaultMaglevTable, 2, MaxMaglevTable)
		if err != nil {
			return nil, err
		}
		if !isPrime(m) {
			return nil, fmt.Errorf("table: want a prime number (Maglev's lookup table size must be prime, e.g. 65537), got %q", params["table"])
		}
		return func(env *buildEnv) Picker {
			return &maglev{rand: env.rand, weights: env.weights, m: uint64(m)}
		}, nil
	})
}

// isPrime reports whether n is a prime, by trial division.
func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// maglev is Maglev hashing (Eisenbud et al., "Maglev: A Fast and Reliable
// Software Network Load Balancer", NSDI 2016), as Envoy's maglev load
// balancer implements it: a lookup table of M entries, M prime, maps
// hash(key) mod M to a host.
//
// Parameter: table (default 65537, Envoy's default) is M; it must be a prime
// in [2, 5000011] (Envoy's limit), since the permutations below visit every
// entry only when M is prime.
//
// Each host has a permutation of the table: entry (offset + j·skip) mod M
// for j = 0, 1, ..., where offset = h1 mod M and skip = h2 mod (M−1) + 1,
// h1 and h2 being xxHash64 of "endpoint-<id>" with seeds 0 and 1 (Envoy
// hashes the host's address the same way). The table is filled in rounds:
// in each round every host takes, in turn, the next entry of its
// permutation that is still empty, until the table is full. Weights
// (Env.Weights) are honoured as Envoy does: a host with weight w takes an
// entry in round r (from 1) only when r·w/wmax >= the number of entries it
// has taken so far, wmax being the largest weight (Envoy's target_weight,
// kept as a count so that rounding cannot make a heaviest host skip a
// round): the heaviest hosts fill every round and a host of a third of that
// weight about every third round, so table shares are proportional to
// weight. With equal weights every host gets floor(M/N) or ceil(M/N)
// entries. Hosts take their turns in id order, so the table depends on the
// set of hosts, not on their order in the slice (Envoy sorts them by the
// address it hashes, for the same reason). If there are more hosts than
// entries, some hosts get none, as in Envoy.
//
// The table is rebuilt at the first pick with a key after the host set
// changes (UpdateHosts), which at the default size takes a few milliseconds;
// a pick is one hash and one table read. Removing one host of N moves its
// own 1/N of the keys and only a little more, somewhat more than a ring
// would.
//
// Keys are hashed with xxHash64 of their 8 bytes, little-endian. A request
// without a key goes to a host drawn uniformly at random from the given
// hosts; Envoy, without a hash policy, looks a random number up in the
// table, which follows table shares (and so weights) rather than being
// uniform over hosts.
type maglev struct {
	rand    *rand.Rand
	weights []float64 // by endpoint id
	m       uint64    // table size, prime

	// Guarded by the Balancer's mutex.
	set   hostSet
	table []int32 // endpoint by entry
	build maglevBuilder
}

var (
	_ Picker       = (*maglev)(nil)
	_ HostsUpdater = (*maglev)(nil)
)

// UpdateHosts records the host set; the table follows at the next pick with
// a key.
func (p *maglev) UpdateHosts(hosts []int) { p.set.update(hosts) }

func (p *maglev) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if !req.HasKey {
		return hosts[p.rand.IntN(len(hosts))], noDone
	}
	if p.set.rebuild() {
		p.table = p.build.fill(p.table, p.m, p.set.ids, p.weights)
	}
	return int(p.table[hashKey(req.Key)%p.m]), noDone
}

// maglevBuilder builds Maglev tables, reusing its buffers between builds.
type maglevBuilder struct {
	hosts []maglevHost
	name  []byte
}

// maglevHost is one host's state while a table is filled.
type maglevHost struct {
	id    int32
	pos   uint64  // the next entry of its permutation to try
	skip  uint64  // step of its permutation
	ratio float64 // its weight over the largest weight, in (0, 1]
	taken float64 // entries taken so far
}

// fill returns the Maglev table of size m for ids (ascending), reusing
// table's storage.
func (b *maglevBuilder) fill(table []int32, m uint64, ids []int, weights []float64) []int32 {
	b.prepare(m, ids, weights)
	return b.populate(table, m)
}

// prepare computes each host's permutation and weight ratio.
func (b *maglevBuilder) prepare(m uint64, ids []int, weights []float64) {
	b.hosts = b.hosts[:0]
	var heaviest float64
	for _, id := range ids {
		b.name = appendEndpointName(b.name[:0], id)
		b.hosts = append(b.hosts, maglevHost{
			id:    int32(id),
			pos:   xxhashSeeded(b.name, 0) % m,
			skip:  xxhashSeeded(b.name, 1)%(m-1) + 1,
			ratio: weights[id],
		})
		heaviest = max(heaviest, weights[id])
	}
	for i := range b.hosts {
		b.hosts[i].ratio /= heaviest
	}
}

// xxhashSeeded is xxHash64 of b with the given seed.
func xxhashSeeded(b []byte, seed uint64) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(seed)
	d.Write(b)
	return d.Sum64()
}

// populate fills a table of size m from the prepared hosts, round by round,
// reusing table's storage.
func (b *maglevBuilder) populate(table []int32, m uint64) []int32 {
	if uint64(cap(table)) < m {
		table = make([]int32, m)
	}
	table = table[:m]
	for i := range table {
		table[i] = -1
	}
	filled := uint64(0)
	for round := 1; filled < m; round++ {
		for i := range b.hosts {
			h := &b.hosts[i]
			if float64(round)*h.ratio < h.taken {
				continue
			}
			h.taken++
			for table[h.pos] >= 0 {
				h.advance(m)
			}
			table[h.pos] = h.id
			h.advance(m)
			if filled++; filled == m {
				break
			}
		}
	}
	return table
}

// advance moves h to the next entry of its permutation.
func (h *maglevHost) advance(m uint64) {
	h.pos += h.skip
	if h.pos >= m {
		h.pos -= m
	}
}

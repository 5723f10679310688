package strategies

import "math/rand/v2"

func init() {
	registerBase("key-hash", nil, noParams(func(env *buildEnv) Picker {
		return &keyModulo{rand: env.rand}
	}))
}

// keyModulo is plain modulo hashing, the contrast case for the consistent
// hashes: a request with key k goes to the host at position k mod n of the
// n given hosts in ascending id order. When n changes almost every key
// moves, where ring-hash and maglev move about 1/n of them.
//
// The key is used as it is, without hashing it first (the identity hash):
// the load generator already spreads its keys (the "heterogeneous" scenario
// sends request number mod 100 and relies on key mod N), and a hash would
// only scramble that. Hosts are ranked by id, not by their position in the
// slice, so the same set in another order maps keys identically; the
// ranking is redone only when the hosts change (UpdateHosts). It has no
// parameters and ignores weights. A request without a key goes to a host
// drawn uniformly at random.
type keyModulo struct {
	rand *rand.Rand

	// Guarded by the Balancer's mutex.
	set hostSet
}

var (
	_ Picker       = (*keyModulo)(nil)
	_ HostsUpdater = (*keyModulo)(nil)
)

// UpdateHosts ranks hosts by id.
func (p *keyModulo) UpdateHosts(hosts []int) { p.set.update(hosts) }

func (p *keyModulo) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if !req.HasKey {
		return hosts[p.rand.IntN(len(hosts))], noDone
	}
	ids := p.set.ids
	return ids[req.Key%uint64(len(ids))], noDone
}

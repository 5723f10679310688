package engine

import (
	"math"
	"sort"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// KeySource draws request keys for an experiment's KeySpec. Key i (the
// i-th request the generator sends) depends only on the seed, i and the
// time it is sent, so the real engine and the simulator draw the same keys
// from the same seed.
//
// A KeySource of an experiment's requests (requests.key) instead gives
// request i the key of the request RequestPicker chooses for i, if it
// carries one.
type KeySource struct {
	spec experiments.KeySpec
	seed uint64
	cdf  []float64 // zipf: cumulative probability of keys 0..N-1

	pick *RequestPicker        // set: keys come from reqs
	reqs []experiments.Request // the requests pick chooses among
}

// ExperimentKeys returns exp's key source: drawn from its KeySpec, or read
// from the requests it sends; nil when requests carry no key.
func ExperimentKeys(exp *experiments.Experiment) *KeySource {
	if r := exp.Requests; r != nil && r.Key != nil {
		return &KeySource{seed: exp.Seed, pick: NewRequestPicker(r, exp.Seed), reqs: r.List}
	}
	return NewKeySource(exp.Keys, exp.Seed)
}

// NewKeySource returns the keys spec describes, drawn from seed, or nil
// when spec is nil (requests carry no key).
func NewKeySource(spec *experiments.KeySpec, seed uint64) *KeySource {
	if spec == nil {
		return nil
	}
	k := &KeySource{spec: *spec, seed: seed}
	if spec.Dist == experiments.KeysZipf {
		k.cdf = make([]float64, spec.N)
		var sum float64
		for i := range k.cdf {
			sum += math.Pow(float64(i+1), -spec.S)
			k.cdf[i] = sum
		}
		for i := range k.cdf {
			k.cdf[i] /= sum
		}
	}
	return k
}

// Draw returns the key of request i, sent at elapsed time at; ok is false
// when request i carries none (one of the experiment's requests without
// the key's header or path).
func (k *KeySource) Draw(i uint64, at time.Duration) (key uint64, ok bool) {
	if k.pick != nil {
		r := k.reqs[k.pick.Pick(i)]
		return r.Key, r.HasKey
	}
	return k.Key(i, at), true
}

// Key returns the key of request i, sent at elapsed time at, from the
// KeySpec (Draw also covers keys read from requests).
func (k *KeySource) Key(i uint64, at time.Duration) uint64 {
	s := k.spec
	if s.HotShare > 0 && at >= s.HotFrom && (s.HotUntil == 0 || at < s.HotUntil) &&
		unit(splitmix(k.seed^0x5bd1e9955bd1e995, i)) < s.HotShare {
		return s.HotKey
	}
	switch s.Dist {
	case experiments.KeysSequence:
		return i % uint64(s.N)
	case experiments.KeysZipf:
		u := unit(splitmix(k.seed, i))
		j := sort.SearchFloat64s(k.cdf, u)
		return uint64(min(j, len(k.cdf)-1))
	default:
		return uint64(unit(splitmix(k.seed, i)) * float64(s.N))
	}
}

// splitmix returns the i-th output of a SplitMix64 sequence started at seed.
func splitmix(seed, i uint64) uint64 {
	z := seed + 0x9e3779b97f4a7c15*(i+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps x to [0, 1) using its top 53 bits.
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

package strategies

import "math/rand/v2"

func init() {
	registerBase("random", nil, noParams(func(env *buildEnv) Picker { return &random{rand: env.rand} }))
}

// random picks uniformly among the given hosts (HAProxy's "random(1)",
// Envoy's RANDOM policy).
type random struct {
	rand *rand.Rand
}

var _ Picker = (*random)(nil)

func (r *random) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	return hosts[r.rand.IntN(len(hosts))], noDone
}

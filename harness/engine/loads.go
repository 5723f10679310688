package engine

import (
	"math/rand/v2"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// LoadPolling says whether the balancers of one strategy (those of one
// GeneratorBalancers call) read a shared load signal: how often the engine
// must refresh it, and the board it publishes to, which every replica
// reads. Each engine runs one poller per strategy run (per generator of a
// spread run): the real engine reads the instances' control API stats, the
// simulator its model's state in virtual time.
func LoadPolling(lbs []*strategies.Balancer) (interval time.Duration, board *strategies.LoadBoard, ok bool) {
	if len(lbs) == 0 {
		return 0, nil, false
	}
	interval, ok = lbs[0].LoadReports()
	if !ok {
		return 0, nil, false
	}
	board, ok = lbs[0].LoadSource().(*strategies.LoadBoard)
	return interval, board, ok
}

// ReadsLoads reports whether strategy name reads a shared load signal, and
// its interval; false for a spec that does not build (Check reports those).
func ReadsLoads(name string) (time.Duration, bool) {
	if proxyspec.IsProxy(name) {
		return 0, false
	}
	lb, err := strategies.New(name, strategies.Env{N: 1, Rand: rand.New(rand.NewPCG(0, 0)), Loads: strategies.NewLoadBoard()})
	if err != nil {
		return 0, false
	}
	return lb.LoadReports()
}

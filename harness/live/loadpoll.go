package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// checkLoadPolling rejects strategies that read a shared load signal
// (server-load with report_interval) where this engine cannot poll it: the
// generators of a spread run have no control API of the instances, and
// neither has lbchaos proxy.
func checkLoadPolling(exp *experiments.Experiment) error {
	for i, name := range exp.Strategies {
		if !proxyspec.IsProxy(name) {
			continue
		}
		if ps, err := proxyspec.Parse(name); err == nil && ps.Kind == proxyspec.Lbchaos {
			if _, ok := engine.ReadsLoads(ps.Algorithm); ok {
				return fmt.Errorf("strategies[%d] %s: report_interval needs the engine's load poller, which lbchaos proxy does not run; use the strategy without the proxy", i, name)
			}
		}
	}
	if exp.Generators <= 1 {
		return nil
	}
	for i, name := range exp.Strategies {
		if _, ok := engine.ReadsLoads(name); ok {
			return fmt.Errorf("strategies[%d] %s: report_interval polls the instances' control API from the load generator, which a spread run's generators (generators: %d) do not reach; use generators: 1", i, name, exp.Generators)
		}
	}
	return nil
}

// loadStatter is what the poller reads of an instance: its control API's
// stats (faultyserver.Client).
type loadStatter interface {
	Stats(ctx context.Context) (faultyserver.Stats, error)
}

// startLoadPoll starts the one load poller of a strategy whose balancers
// (lbs, every replica) read a shared load signal, in wg until ctx is done;
// it does nothing for other strategies. Every backend must have a control
// API. The poller it returns (nil when none) may be read once wg is done.
func startLoadPoll(ctx context.Context, wg *sync.WaitGroup, lbs []*strategies.Balancer, fl fleet.Fleet) (*loadPoller, error) {
	interval, board, ok := engine.LoadPolling(lbs)
	if !ok {
		return nil, nil
	}
	backends := fl.Backends()
	stats := make([]loadStatter, len(backends))
	for _, b := range backends {
		if b.Control == nil {
			return nil, fmt.Errorf("strategy %s: report_interval polls every instance's control API, and instance %d has none", lbs[0].Spec(), b.ID)
		}
		stats[b.ID] = b.Control
	}
	p := newLoadPoller(stats, board)
	wg.Go(func() { p.run(ctx, interval) })
	return p, nil
}

// note says how many reads failed, or nothing when none did.
func (p *loadPoller) note(name string) []string {
	if p == nil || p.errs == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: %d of %d load polls of an instance failed and kept its previous load (last: %v).", name, p.errs, p.reads, p.last)}
}

// loadPoller reads every instance's load, the number the load header
// carries (requests holding a worker plus those queued), from its stats
// and publishes the loads on a board, every interval; the first poll is at
// once. A read that fails, or does not end within the interval, keeps
// that instance's previous load (0 before any).
type loadPoller struct {
	stats []loadStatter // by instance id
	board *strategies.LoadBoard
	loads []float64 // the last published; only run's goroutine uses it
	// reads and errs count the reads and the failed ones, last is the
	// last failure; read them after run returned.
	reads, errs int
	last        error
}

func newLoadPoller(stats []loadStatter, board *strategies.LoadBoard) *loadPoller {
	return &loadPoller{stats: stats, board: board, loads: make([]float64, len(stats))}
}

// run polls until ctx is done.
func (p *loadPoller) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		p.poll(ctx, interval)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll reads every instance at once and publishes.
func (p *loadPoller) poll(ctx context.Context, timeout time.Duration) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type read struct {
		load float64
		err  error
	}
	reads := make([]read, len(p.stats))
	var wg sync.WaitGroup
	for id, s := range p.stats {
		wg.Go(func() {
			st, err := s.Stats(pctx)
			reads[id] = read{float64(st.InFlight + st.Queued), err}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	for id, r := range reads {
		p.reads++
		if r.err != nil {
			p.errs++
			p.last = errors.Join(fmt.Errorf("instance %d", id), r.err)
			continue
		}
		p.loads[id] = r.load
	}
	p.board.Publish(p.loads)
}

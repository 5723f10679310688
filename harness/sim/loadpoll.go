package sim

import (
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// loadPoll is the simulator's load poller for a strategy that reads a
// shared load signal (server-load with report_interval), as the real
// engine's polls the instances' control API: at 0 and then every interval
// of virtual time until the end of the attack it reads every instance's
// load, the number the load header carries (workers held plus requests
// queued), and publishes it on the board of every generator (one board per
// generator, shared by its replicas, as each real generator would poll).
type loadPoll struct {
	boards   []*strategies.LoadBoard
	interval time.Duration
	next     time.Duration // never when nothing is polled
	buf      []float64
}

// newLoadPoll returns the poller of gens' balancers, or one whose next is
// never when they read no shared load signal.
func newLoadPoll(gens []simGenerator, instances int) loadPoll {
	p := loadPoll{next: never}
	for _, g := range gens {
		interval, board, ok := engine.LoadPolling(g.lbs)
		if !ok {
			return p
		}
		p.interval = interval
		p.boards = append(p.boards, board)
	}
	p.next, p.buf = 0, make([]float64, instances)
	return p
}

// poll publishes the instances' loads now and schedules the next poll.
func (p *loadPoll) poll(insts []simInstance, duration time.Duration) {
	for i := range insts {
		p.buf[i] = float64(insts[i].busy + insts[i].queue.len())
	}
	for _, b := range p.boards {
		b.Publish(p.buf)
	}
	p.next += p.interval
	if p.next >= duration {
		p.next = never
	}
}

package live

import (
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

var _ stopper = (*grpcAttacker)(nil)

// grpcAttacker is Vegeta's open loop for calls Vegeta cannot make: the
// pacer says when the next call is due, and each call runs in a goroutine
// of its own, so the pacer never waits for an answer. Call k (k = 0, 1,
// ...) gets sequence number k, as Vegeta numbers its results.
type grpcAttacker struct {
	stopOnce sync.Once
	stop     chan struct{}
}

func newGRPCAttacker() *grpcAttacker { return &grpcAttacker{stop: make(chan struct{})} }

// Stop ends the attack: no call is started after it. It reports whether
// this call stopped it.
func (a *grpcAttacker) Stop() bool {
	stopped := false
	a.stopOnce.Do(func() {
		close(a.stop)
		stopped = true
	})
	return stopped
}

// attack starts calls paced by p for at most du (0: until p stops) and
// returns their results, closed once every call started has returned.
// call(seq) makes call seq and returns its result.
func (a *grpcAttacker) attack(p vegeta.Pacer, du time.Duration, call func(seq uint64) *vegeta.Result) <-chan *vegeta.Result {
	results := make(chan *vegeta.Result, 1024)
	go func() {
		var wg sync.WaitGroup
		defer func() {
			wg.Wait()
			close(results)
		}()
		began := time.Now()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for seq := uint64(0); ; seq++ {
			elapsed := time.Since(began)
			if du > 0 && elapsed > du {
				return
			}
			wait, stop := p.Pace(elapsed, seq)
			if stop {
				return
			}
			if wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-a.stop:
					return
				}
			} else {
				select {
				case <-a.stop:
					return
				default:
				}
			}
			wg.Go(func() { results <- call(seq) })
		}
	}()
	return results
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// What the providers whose instances outlive a strategy (containers, pods)
// share: the fleets handed out, the one kept for reuse, and each fleet's
// addresses, which a restart may change.

// ErrProviderClosed is the error of a Start on a closed provider.
var ErrProviderClosed = errors.New("provider closed")

// Reusable is a fleet a provider hands out and may keep for the next
// Start.
type Reusable[F any] interface {
	comparable
	// Spec is what the fleet was started for.
	Spec() Spec
	// Reuse brings the fleet's instances back to a new fleet's state and
	// returns a new open fleet over them.
	Reuse(ctx context.Context) (F, error)
	// Terminate removes its instances.
	Terminate()
}

// Pool tracks the fleets a provider has handed out and, with Reuse, keeps
// the one released last for the next Start of an identical spec. Set its
// exported fields before first use.
type Pool[F Reusable[F]] struct {
	Reuse bool
	// Name prefixes its errors and log lines ("docker backends" and
	// "docker"); Things names the instances in them ("containers").
	Name, Things string
	Log          io.Writer // nil: no log lines

	mu     sync.Mutex
	seq    int            // fleets started, for their names
	live   map[F]struct{} // handed out and not released
	idle   F              // released and kept for reuse; zero: none
	closed bool
}

// Start hands out a fleet for spec: the one kept for reuse when it was
// started for an equal spec and its Reuse succeeds, else a new one from
// start, given the fleet's sequence number. A kept fleet that does not
// fit, or whose reuse failed (logged), is terminated. reused reports which
// it was.
func (p *Pool[F]) Start(ctx context.Context, spec Spec, start func(seq int) (F, error)) (f F, reused bool, err error) {
	var zero F
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return zero, false, fmt.Errorf("%s: %w", p.Name, ErrProviderClosed)
	}
	idle := p.idle
	p.idle = zero
	p.seq++
	seq := p.seq
	p.mu.Unlock()

	if idle != zero {
		if idle.Spec().Equal(spec) {
			f, err := idle.Reuse(ctx)
			if err == nil {
				return f, true, p.track(f)
			}
			if p.Log != nil {
				fmt.Fprintf(p.Log, "%s: reusing %s failed, starting new ones: %v\n", p.Name, p.Things, err)
			}
		}
		idle.Terminate()
	}
	if f, err = start(seq); err != nil {
		return zero, false, err
	}
	return f, false, p.track(f)
}

// track records f as handed out, or terminates it when the pool closed
// meanwhile.
func (p *Pool[F]) track(f F) error {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		if p.live == nil {
			p.live = map[F]struct{}{}
		}
		p.live[f] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		f.Terminate()
		return fmt.Errorf("%s: %w", p.Name, ErrProviderClosed)
	}
	return nil
}

// Release is called by a fleet's Close: with Reuse the pool keeps f for
// the next Start (terminating any it kept before); otherwise, or once
// closed, f is terminated.
func (p *Pool[F]) Release(f F) {
	var zero F
	p.mu.Lock()
	delete(p.live, f)
	drop := f
	if p.Reuse && !p.closed {
		drop, p.idle = p.idle, f
	}
	p.mu.Unlock()
	if drop != zero {
		drop.Terminate()
	}
}

// Drop is Release for a fleet that cannot be reused (its instances were
// replaced under it): f is terminated, whatever Reuse says.
func (p *Pool[F]) Drop(f F) {
	p.mu.Lock()
	delete(p.live, f)
	p.mu.Unlock()
	f.Terminate()
}

// Close closes the pool and returns every fleet handed out or kept; ok is
// false when it was closed already.
func (p *Pool[F]) Close() (fleets []F, ok bool) {
	var zero F
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false
	}
	p.closed = true
	for f := range p.live {
		fleets = append(fleets, f)
	}
	if p.idle != zero {
		fleets = append(fleets, p.idle)
	}
	p.live, p.idle = nil, zero
	return fleets, true
}

// Addresses holds a fleet's backends, which a restart may change, and
// whether the fleet is closed. A fleet embeds it: its Backends method is
// the fleet's.
type Addresses struct {
	mu       sync.RWMutex
	backends []Backend
	closed   bool
}

// SetAll sets every backend.
func (a *Addresses) SetAll(bs []Backend) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.backends = bs
}

// Set sets backend id.
func (a *Addresses) Set(id int, b Backend) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.backends[id] = b
}

// Backend returns backend id.
func (a *Addresses) Backend(id int) Backend {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.backends[id]
}

// Backends implements Fleet: the instances in id order, a copy (after a
// restart, call it again for the new address).
func (a *Addresses) Backends() []Backend {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]Backend, len(a.backends))
	copy(out, a.backends)
	return out
}

// MarkClosed closes the fleet to further use; false when it already was.
func (a *Addresses) MarkClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.closed = true
	return true
}

// Usable returns an error when the fleet is closed or has no instance id.
func (a *Addresses) Usable(id int) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return errors.New("fleet closed")
	}
	if id < 0 || id >= len(a.backends) {
		return fmt.Errorf("instance %d does not exist (the fleet has %d)", id, len(a.backends))
	}
	return nil
}

// Closed reports whether MarkClosed was called.
func (a *Addresses) Closed() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.closed
}

package faultyserver

import (
	"context"
	"sync"
)

// abandoned holds the requests an instance keeps serving after their
// client went away (Config.KeepAbandoned): Reset cancels them, so that
// work nobody waits for does not outlive the measurement it belongs to
// and slow the next one down (a harness resets its instances between
// strategies). Until a Reset such a request is served as the option says.
type abandoned struct {
	mu sync.Mutex
	m  map[*abandonedReq]struct{}
}

type abandonedReq struct{ cancel context.CancelFunc }

// keep returns the context a request is served under with KeepAbandoned:
// not cancelled when its client goes away, only by a Reset after that.
// done must be called when the request ends.
func (a *abandoned) keep(client context.Context) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(client))
	r := &abandonedReq{cancel: cancel}
	stop := context.AfterFunc(client, func() {
		a.mu.Lock()
		if a.m == nil {
			a.m = map[*abandonedReq]struct{}{}
		}
		a.m[r] = struct{}{}
		a.mu.Unlock()
	})
	return ctx, func() {
		if !stop() {
			a.mu.Lock()
			delete(a.m, r)
			a.mu.Unlock()
		}
		cancel()
	}
}

// cancelAll ends every request kept after its client went away.
func (a *abandoned) cancelAll() {
	a.mu.Lock()
	m := a.m
	a.m = nil
	a.mu.Unlock()
	for r := range m {
		r.cancel()
	}
}

package live

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// EndpointsReach is implemented by generators whose endpoints API the
// coordinator can reach (a generator pod, through the cluster's API
// server): the client to use, the API's base URL and the run's token, or
// an error while the generator cannot be reached yet.
type EndpointsReach interface {
	EndpointsAPI() (client *http.Client, base, token string, err error)
}

// pushRetry is how often a push that failed (a generator not listening
// yet) is tried again.
const pushRetry = 200 * time.Millisecond

// followEndpoints gives every generator of gens that can be reached the
// instances' current endpoints, as fl's watch reports them, until the
// returned stop is called: the whole set at each change, the latest set
// winning over one not yet delivered. It does nothing (and says so on
// log) when fl reports no endpoints.
func followEndpoints(fl fleet.Fleet, gens []engine.Generator, log io.Writer) (stop func()) {
	ew, ok := fl.(fleet.EndpointWatcher)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var pushers []*pusher
	for g, gen := range gens {
		if r, ok := gen.(EndpointsReach); ok {
			p := &pusher{reach: r, g: g, changed: make(chan struct{}, 1)}
			pushers = append(pushers, p)
			wg.Go(func() { p.run(ctx) })
		}
	}
	stopWatch, err := ew.WatchEndpoints(func(eps map[int]*url.URL) {
		for _, p := range pushers {
			p.set(eps)
		}
	})
	if err != nil {
		fmt.Fprintf(log, "      the instances' endpoints are not followed: %v\n", err)
		stopWatch = func() {}
	}
	return func() {
		stopWatch()
		cancel()
		wg.Wait()
	}
}

// pusher delivers the latest endpoint set to one generator.
type pusher struct {
	reach   EndpointsReach
	g       int
	changed chan struct{}

	mu     sync.Mutex
	latest map[int]*url.URL
	ver    int // of latest
}

func (p *pusher) set(eps map[int]*url.URL) {
	p.mu.Lock()
	p.latest, p.ver = maps.Clone(eps), p.ver+1
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *pusher) run(ctx context.Context) {
	sent := 0
	retry := time.NewTicker(pushRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.changed:
		case <-retry.C:
		}
		p.mu.Lock()
		eps, ver := p.latest, p.ver
		p.mu.Unlock()
		if ver == sent {
			continue
		}
		client, base, token, err := p.reach.EndpointsAPI()
		if err != nil {
			continue // not reachable yet
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = PushEndpoints(pctx, client, base, token, eps)
		cancel()
		if err == nil {
			sent = ver
		}
	}
}

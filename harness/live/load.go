package live

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// A load is what differs between the kinds of attack: how the requests of
// one strategy are made and routed (HTTP through the transport client, to
// the instances or to a proxy under test; gRPC calls through built-in
// strategies or grpc-go's own policies). The attack (attack.go) owns the
// rest of the lifecycle, the same for every load. A new kind of load is a
// type implementing it; retries and hedging belong in the transport
// client's Call, under every load alike.
type load interface {
	router
	stopper
	// send starts the requests p paces, for at most du, and returns their
	// results; the channel closes once every request sent has ended. The
	// pacer never waits for an answer.
	send(p vegeta.Pacer, du time.Duration) <-chan *vegeta.Result
	// moved points instance id at its new address (a container that came
	// back elsewhere).
	moved(id int, u *url.URL)
	// setHosts is told the host set (instance ids, in order) each time
	// instances join; the built-in strategies are told by the attack.
	setHosts(hosts []int)
	// client is the transport client the requests or the health probes go
	// through, whose connection bound the measurement reports; nil when
	// there is none (grpc-go's own policy).
	client() *transport.Client
	// notes say how the requests travelled, first among the strategy's.
	notes() []string
	close()
}

// router is what the result loop asks of the client that routed the
// requests: an HTTP transport client, or the gRPC clients.
type router interface {
	// Take removes and returns the route of the result with sequence
	// number seq; ok is false when the request never reached a balancer.
	Take(seq uint64) (rt *transport.Route, ok bool)
	// InFlight returns how many requests are under way.
	InFlight() int64
	// Abort cancels the requests under way: the run was interrupted.
	Abort()
}

// stopper stops an attack: no more requests are sent.
type stopper interface{ Stop() bool }

var (
	_ load    = (*httpLoad)(nil)
	_ load    = (*grpcLoad)(nil)
	_ router  = (*transport.Client)(nil)
	_ stopper = (*vegeta.Attacker)(nil)
)

// httpLoad is Vegeta's attack through the transport client, which sends
// each request to the instance the strategy picks, or to the proxy under
// test.
type httpLoad struct {
	*transport.Client
	attacker *vegeta.Attacker
	targeter vegeta.Targeter
	name     string
}

// newHTTPLoad returns the load of generator gen of gens (0 of 1 for a
// single process) through c, at its share of exp's peak rate; *start is
// the attack's start, which the targets' keys may depend on.
func newHTTPLoad(exp *experiments.Experiment, name string, c *transport.Client, start *time.Time, gen, gens int) *httpLoad {
	return &httpLoad{Client: c, name: name, attacker: newAttacker(c, exp.PeakRate()/float64(gens)), targeter: newTargeter(exp, start, gen, gens)}
}

func (l *httpLoad) send(p vegeta.Pacer, du time.Duration) <-chan *vegeta.Result {
	return l.attacker.Attack(l.targeter, p, du, l.name)
}

func (l *httpLoad) Stop() bool                { return l.attacker.Stop() }
func (l *httpLoad) moved(id int, u *url.URL)  { l.SetTarget(id, u) }
func (l *httpLoad) setHosts([]int)            {}
func (l *httpLoad) client() *transport.Client { return l.Client }
func (l *httpLoad) notes() []string           { return nil }
func (l *httpLoad) close()                    { l.Close() }

// newAttacker returns the Vegeta attacker of a load of rate requests per
// second through c.
func newAttacker(c *transport.Client, rate float64) *vegeta.Attacker {
	client := &http.Client{
		Transport: c, // applies the request timeout itself
		Timeout:   0,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Workers(uint64(max(10, min(rate/20, 1000)))),
		// Keep no body in the results, yet read every body to its end
		// (Vegeta discards what is past MaxBody), so that a service's cost
		// of sending it is real: TestRunTargetsFile checks it.
		vegeta.MaxBody(0),
	)
}

// startProbes starts a built-in strategy's active health checks of the
// instances through c, in wg until ctx is done; a proxy under test (no
// lbs) probes its backends itself, if configured to, and grpc-go's own
// policies (no c) have none of ours.
func startProbes(ctx context.Context, wg *sync.WaitGroup, lbs []*strategies.Balancer, c *transport.Client, instances int) {
	if len(lbs) == 0 || c == nil {
		return
	}
	if pc, ok := lbs[0].Probes(); ok {
		for id := range instances {
			wg.Go(func() { transport.Probe(ctx, pc, id, c, lbs) })
		}
	}
}

// runJoins adds the joining instances to every balancer's host set at their
// time, and hands each new host set to also (when not nil), until ctx is
// done.
func runJoins(ctx context.Context, start time.Time, exp *experiments.Experiment, lbs []*strategies.Balancer, also func(hosts []int)) {
	at, hosts := engine.JoinSteps(exp)
	for i, t := range at {
		timer := time.NewTimer(time.Until(start.Add(t)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		for _, lb := range lbs {
			_ = lb.SetHosts(hosts[i]) // validated by construction
		}
		if also != nil {
			also(hosts[i])
		}
	}
}

package live

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// GenerateSpec is one load generator's part of a distributed run
// (`generators: N`): the coordinator runs the fleet and the faults, and
// each of its generators (`lbchaos generate`) sends its share of the load.
type GenerateSpec struct {
	// Exp is the resolved experiment; Strategy the one strategy to run.
	Exp      *experiments.Experiment
	Strategy string
	// Targets are the instances' base URLs, in id order; nil for an
	// instance that does not exist yet (lbchaos generate --target none),
	// which the strategy leaves out until the endpoints API gives it an
	// address (it needs EndpointsListen).
	Targets []*url.URL
	// Proxy, for a proxy strategy, is where the coordinator's proxy under
	// test listens: every request goes there. Upstreams maps how the
	// proxy names its upstreams to instance ids (proxies.Proxy.Upstreams).
	Proxy     *url.URL
	Upstreams map[string]int
	// Generator is this generator's index among Exp.Generators: it sends
	// request k of the one arrival schedule when k mod Exp.Generators ==
	// Generator, through its Exp.Replicas balancers.
	Generator int
	// Start is the shared start of the attack, on the wall clock.
	Start time.Time
	// Raw adds every result, in Vegeta's encoding, to the stream.
	Raw bool
	// MaxConnsPerInstance bounds the connections to one instance; 0
	// derives it from the open-file limit.
	MaxConnsPerInstance int
	// EndpointsListen, when set, is the address (":9091", see
	// EndpointsPort) this generator serves its endpoints API on
	// (endpoints.go), from before the start until Generate returns: its
	// coordinator gives it there the instances' current endpoints, which
	// the strategy then picks among. Not for a proxy strategy, whose proxy
	// follows the instances itself.
	EndpointsListen string
	// Token is the run's control token, which the endpoints API requires
	// (faultyserver.TokenEnv); without one, EndpointsListen must be a
	// loopback address.
	Token string
}

// Generate runs one generator's share of the load from spec.Start and
// writes its results to out as a generator's stream (engine.StreamPrefix),
// for the coordinator to merge; progress goes to log. When ctx is
// cancelled the attack stops, the requests in flight are left out as
// aborted, and the stream ends with what was measured, marked
// interrupted. An error means the stream is incomplete.
func Generate(ctx context.Context, spec GenerateSpec, out, log io.Writer) error {
	exp, name := spec.Exp, spec.Strategy
	gens, gen := max(1, exp.Generators), spec.Generator
	n := exp.Instances.Count
	switch {
	case len(exp.Zones) > 0:
		return fmt.Errorf("%s has zones, which a run of its own sends from one loopback address per zone; a generator of a distributed run does not", exp.Name)
	case gen < 0 || gen >= gens:
		return fmt.Errorf("generator %d: not one of the experiment's %d (0 to %d)", gen, gens, gens-1)
	case len(spec.Targets) != n:
		return fmt.Errorf("%d targets for %d instances", len(spec.Targets), n)
	case proxyspec.IsProxy(name) != (spec.Proxy != nil):
		return fmt.Errorf("strategy %s: a proxy strategy needs the proxy's URL, and only a proxy strategy takes one", name)
	case spec.Proxy != nil && spec.EndpointsListen != "":
		return fmt.Errorf("strategy %s: its generators pick no instance, the proxy does: they take no endpoints (EndpointsListen)", name)
	}
	var absent []int // instances that do not exist yet
	for id, u := range spec.Targets {
		if u == nil && spec.Proxy == nil {
			absent = append(absent, id)
		}
	}
	if len(absent) > 0 && spec.EndpointsListen == "" {
		return fmt.Errorf("target of instance %d: none (an instance that does not exist yet) needs the endpoints API (EndpointsListen), which gives its address once it does", absent[0])
	}
	conns := spec.MaxConnsPerInstance
	if conns == 0 {
		conns = connsPerInstance(RaiseFileLimit(), n, nil)
	}
	one := *exp
	one.Strategies = []string{name}
	a := &attack{job: engine.Job{Exp: &one, Log: log}, events: engine.NewEventLog(spec.Start), start: spec.Start, every: 5 * time.Second, proxied: spec.Proxy != nil, service: proxyspec.IsService(name)}
	var c *transport.Client
	if spec.Proxy != nil {
		ids := spec.Upstreams
		upstream := func(u string) (int, bool) { return proxies.InstanceIn(ids, u) }
		c = transport.NewProxyClient(spec.Proxy, upstream, n, exp.Timeout, proxyClientConns(exp, conns, n), protocolOptions(exp)...)
		c.SetGenerator(gen, gens)
	} else {
		var err error
		if a.lbs, err = engine.GeneratorBalancersWithout(exp, name, strategies.SystemClock{}, gen, gens, a.events, absent); err != nil {
			return fmt.Errorf("strategy %s: %w", name, err)
		}
		c = transport.NewClient(a.lbs, spec.Targets, exp.Timeout, conns, protocolOptions(exp)...)
	}
	a.load = newHTTPLoad(exp, name, c, &a.start, gen, gens)
	defer a.load.close()
	if spec.EndpointsListen != "" {
		stop, err := serveEndpoints(spec.EndpointsListen, spec.Token, c, n)
		if err != nil {
			return err
		}
		defer stop()
	}
	a.sched = engine.Stride(engine.ExperimentSchedule(exp), gen, gens)
	a.coll = engine.NewCollector(n, exp.Duration, exp.Timeout, exp.SlowThreshold)
	if engine.HasPolicy(a.lbs) {
		a.coll.CountAttempts()
	}

	// Wait for the shared start; being late is recorded, not an error.
	late := time.Since(a.start)
	if late < 0 {
		timer := time.NewTimer(-late)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("interrupted before the start: %w", ctx.Err())
		case <-timer.C:
		}
		late = 0
	}
	sw := engine.NewStreamWriter(out, engine.StreamHeader{
		Generator: gen, Generators: gens, Replicas: max(1, exp.Replicas), Strategy: name,
		Instances: n, Buckets: a.coll.Buckets(), Start: a.start.UnixNano(), Late: late,
	})
	// A write error sticks in the writer and is returned by End.
	a.coll.EmitBuckets(func(b int, hists, ok []*hdrhistogram.PackedHistogram) { _ = sw.Bucket(b, hists, ok) })
	if spec.Raw {
		a.raw = newRawEncoder(&streamRaw{sw}, false)
	}
	a.tick = func(p engine.GeneratorProgress) { _ = sw.Progress(p) }
	res, err := a.run(ctx) // without a fleet: no faults, no load polling
	if err != nil {
		return err
	}
	if a.service {
		res.unnamed = attributeByConn(res.unnamed, res.conns, res.connInstance, a.coll)
	}
	a.coll.Finish()
	var rerr error
	if a.raw != nil {
		rerr = a.raw.close()
	}
	elapsed := attackTime(exp.Duration, res.interrupted)
	scheduled := a.sched.Count(elapsed)
	result := engine.GeneratorResult{
		Sent:        res.sent,
		Scheduled:   scheduled,
		Behind:      float64(res.sent) < 0.99*float64(scheduled),
		Elapsed:     elapsed,
		Interrupted: res.interrupted >= 0,
		Ejections:   engine.Ejections(a.lbs),
		Retry:       engine.PolicyStats(a.lbs),
		CapHits:     c.CapHits(),
		ConnBound:   conns,
		Unnamed:     res.unnamed,
	}
	// The proxy logged the whole run's sequence numbers.
	for i := range result.Unnamed {
		result.Unnamed[i].Seq = result.Unnamed[i].Seq*uint64(gens) + uint64(gen)
	}
	if rerr != nil {
		result.Notes = append(result.Notes, fmt.Sprintf("%s: generator %d: raw results incomplete: %v", name, gen, rerr))
	}
	if a.service {
		// Per connection, kube-proxy chose a pod: how many choices there were.
		result.Notes = append(result.Notes, fmt.Sprintf("%s: generator %d opened %d connections to the Service (%s).", name, gen, c.Conns(), keepAliveWord(exp)))
	}
	return sw.End(a.coll, a.events, result)
}

// streamRaw writes raw results into a generator's stream.
type streamRaw struct{ sw *engine.StreamWriter }

func (s *streamRaw) Write(p []byte) (int, error) {
	if err := s.sw.Raw(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *streamRaw) Close() error { return nil }

// attributeByConn adds to coll each unnamed result whose connection was
// named by another answer over it (owner: connection id → instance), as
// that instance's, and returns the others. A Kubernetes Service keeps a
// connection on the pod it chose: a request that got no answer went to
// the pod that answered the connection's other requests.
func attributeByConn(unnamed []engine.SeqOutcome, conns map[uint64]transport.ConnRef, owner map[uint64]int, coll *engine.Collector) []engine.SeqOutcome {
	rest := unnamed[:0]
	for _, u := range unnamed {
		if c, ok := conns[u.Seq]; ok {
			if id, ok := owner[c.ID]; ok {
				u.Outcome.Instance = id
				coll.Add(u.Outcome)
				continue
			}
		}
		rest = append(rest, u)
	}
	return rest
}

// keepAliveWord says how the load's connections carry requests.
func keepAliveWord(exp *experiments.Experiment) string {
	if exp.NoKeepAlive {
		return "keepalive: false: a connection per request, so a choice per request"
	}
	return "HTTP/1.1 keep-alive: each connection stays on the pod it was given"
}

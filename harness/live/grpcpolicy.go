package live

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// grpcPolicyClient routes calls with grpc-go's own policy: each of the
// experiment's replicas is a grpc.ClientConn running the policy (under
// the events policy, grpcbalancer.go), fed the instances' addresses in
// instance order by a manual resolver; call seq goes to replica seq mod
// replicas. The policy holds one connection (subchannel) per instance.
type grpcPolicyClient struct {
	// Immutable after construction.
	name      string
	policy    string // grpc-go's name of it
	replicas  []*grpc.ClientConn
	resolvers []*manual.Resolver
	sinks     []*subchannelSink
	timeout   time.Duration
	instances int

	mu    sync.Mutex
	addrs []string // by instance id
	hosts []int    // the host set, in order

	routes   sync.Map // seq -> *transport.Route
	inflight atomic.Int64
	// abort is the client's own cancellation, never a caller's context:
	// Abort cancels it, and with it every call under way.
	abort       context.Context
	cancelAbort context.CancelFunc
}

// newGRPCPolicyClient builds the replicas of gRPC strategy name over
// targets (by instance id), of which hosts are in the host set at the
// start. Subchannel state changes go to events, once armed is set.
func newGRPCPolicyClient(name string, replicas int, targets []*url.URL, hosts []int, timeout time.Duration,
	events *engine.EventLog, armed *atomic.Bool) (*grpcPolicyClient, error) {
	spec, err := strategies.ParseGRPC(name)
	if err != nil {
		return nil, err
	}
	c := &grpcPolicyClient{name: name, policy: spec.Policy, timeout: timeout, instances: len(targets), hosts: hosts}
	c.abort, c.cancelAbort = context.WithCancel(context.Background())
	for _, u := range targets {
		c.addrs = append(c.addrs, u.Host)
	}
	// The policy runs under the events policy; with +retry, grpc-go's
	// retry policy (and throttling) is on and each call may take several
	// attempts, each a pick of the policy's.
	svc := string(spec.ServiceConfig(eventsPolicyPrefix+spec.Policy, faultyserver.GRPCKeyKey))
	for r := range max(1, replicas) {
		sink := &subchannelSink{instanceOf: c.instanceOf, armed: armed, event: func(e strategies.Event) { events.AddFrom(r, e) }}
		res := manual.NewBuilderWithScheme("lbchaos")
		res.InitialState(c.state(sink))
		opts := append(grpcDialOptions(spec.Retry != nil), grpc.WithResolvers(res), grpc.WithDefaultServiceConfig(svc))
		cc, err := grpc.NewClient(fmt.Sprintf("lbchaos:///replica-%d", r), opts...)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("strategy %s: %w", name, err)
		}
		c.replicas, c.resolvers, c.sinks = append(c.replicas, cc), append(c.resolvers, res), append(c.sinks, sink)
	}
	return c, nil
}

// state is the resolver state of the current host set, in order, with
// sink as its attribute.
func (c *grpcPolicyClient) state(sink *subchannelSink) resolver.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := resolver.State{Attributes: attributes.New(sinkKey{}, sink)}
	for _, id := range c.hosts {
		st.Endpoints = append(st.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: c.addrs[id]}}})
	}
	return st
}

// instanceOf maps an address to its instance.
func (c *grpcPolicyClient) instanceOf(addr string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, a := range c.addrs {
		if a == addr {
			return id, true
		}
	}
	return -1, false
}

func (c *grpcPolicyClient) Take(seq uint64) (*transport.Route, bool) {
	rt, ok := c.routes.LoadAndDelete(seq)
	if !ok {
		return nil, false
	}
	return rt.(*transport.Route), true
}

func (c *grpcPolicyClient) InFlight() int64 { return c.inflight.Load() }

// Abort cancels the calls under way, and every one made after it.
func (c *grpcPolicyClient) Abort() { c.cancelAbort() }

func (c *grpcPolicyClient) call(seq uint64, path string, sreq strategies.Request) *vegeta.Result {
	ts := time.Now()
	rt := &transport.Route{Instance: -1, Key: sreq.Key, HasKey: sreq.HasKey}
	c.routes.Store(seq, rt)
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	ctx, cancel := context.WithCancel(context.Background())
	if c.timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), c.timeout)
	}
	defer cancel()
	stop := context.AfterFunc(c.abort, func() {
		rt.Aborted.Store(true)
		cancel()
	})
	defer stop()
	a := invoke(ctx, c.replicas[seq%uint64(len(c.replicas))], path, sreq, c.instances)
	rt.Instance = a.instance
	if rt.Instance < 0 && a.peer != "" {
		if id, ok := c.instanceOf(a.peer); ok {
			rt.Instance = id
		}
	}
	code, ferr := a.feedback()
	if ferr != nil {
		code = 0
		rt.Timeout.Store(!rt.Aborted.Load() && isCallTimeout(ctx, ferr))
	}
	return a.result(c.name, seq, ts, code)
}

// isCallTimeout reports whether a call ended because its deadline passed.
func isCallTimeout(ctx context.Context, err error) bool {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return true
	}
	return ctx.Err() == context.DeadlineExceeded
}

func (c *grpcPolicyClient) update() {
	for i, r := range c.resolvers {
		r.UpdateState(c.state(c.sinks[i]))
	}
}

func (c *grpcPolicyClient) setTarget(id int, u *url.URL) {
	c.mu.Lock()
	c.addrs[id] = u.Host
	c.mu.Unlock()
	c.update()
}

func (c *grpcPolicyClient) setHosts(hosts []int) {
	c.mu.Lock()
	c.hosts = hosts
	c.mu.Unlock()
	c.update()
}

// connect waits for the replicas to be ready, except ring_hash's, which
// connect a subchannel only when a call's hash first picks it.
func (c *grpcPolicyClient) connect(ctx context.Context) {
	if c.policy != strategies.GRPCRingHash {
		waitReady(ctx, c.replicas)
	}
}

func (c *grpcPolicyClient) close() {
	c.Abort()
	for _, cc := range c.replicas {
		_ = cc.Close()
	}
}

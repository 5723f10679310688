package live

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	// grpc-go's policies beside pick_first and round_robin register
	// themselves when imported.
	_ "google.golang.org/grpc/balancer/leastrequest"
	_ "google.golang.org/grpc/balancer/ringhash"
	_ "google.golang.org/grpc/balancer/weightedroundrobin"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/lbchaos/lbchaos/strategies"
)

// A gRPC strategy's policy runs unchanged under a thin parent policy,
// "lbchaos_events_<policy>", registered here for each of grpc-go's
// policies a gRPC strategy can name: it builds the real policy with a
// balancer.ClientConn that passes everything through, except that each
// subchannel's state listener also tells the run's subchannelSink, which
// the resolver state carries as an attribute. Nothing of the policy is
// re-implemented.
const eventsPolicyPrefix = "lbchaos_events_"

// Subchannel event kinds, the reports.Event Kind of a subchannel state
// change: "subchannel-" and the state in lower case with dashes.
const (
	EventSubchannelConnecting       = "subchannel-connecting"
	EventSubchannelReady            = "subchannel-ready"
	EventSubchannelTransientFailure = "subchannel-transient-failure"
	EventSubchannelIdle             = "subchannel-idle"
	EventSubchannelShutdown         = "subchannel-shutdown"
)

func init() {
	for _, p := range strategies.GRPCPolicies() {
		balancer.Register(eventsBuilder{child: p})
	}
}

// subchannelKind returns the event kind of state s.
func subchannelKind(s connectivity.State) string {
	return "subchannel-" + strings.ReplaceAll(strings.ToLower(s.String()), "_", "-")
}

// sinkKey is the resolver.State attribute key of a ClientConn's
// *subchannelSink.
type sinkKey struct{}

// subchannelSink receives one ClientConn's subchannel state changes.
type subchannelSink struct {
	// Immutable after construction.
	instanceOf func(addr string) (int, bool)
	event      func(strategies.Event)
	// armed: changes before the attack starts (the first connections) are
	// not recorded, as a built-in strategy's events before it are not.
	armed *atomic.Bool
}

func (s *subchannelSink) changed(addr string, st balancer.SubConnState) {
	if s == nil || !s.armed.Load() {
		return
	}
	id, ok := s.instanceOf(addr)
	if !ok {
		id = -1
	}
	e := strategies.Event{Time: time.Now(), Endpoint: id, Kind: subchannelKind(st.ConnectivityState)}
	if st.ConnectivityState == connectivity.TransientFailure && st.ConnectionError != nil {
		e.Detail = st.ConnectionError.Error()
	}
	s.event(e)
}

// eventsBuilder builds the events policy around child, grpc-go's policy of
// that name.
type eventsBuilder struct{ child string }

var (
	_ balancer.Builder      = eventsBuilder{}
	_ balancer.ConfigParser = eventsBuilder{}
)

func (b eventsBuilder) Name() string { return eventsPolicyPrefix + b.child }

func (b eventsBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	child := balancer.Get(b.child)
	if child == nil { // every policy GRPCPolicies names is imported above
		panic(fmt.Sprintf("grpc-go policy %q is not registered", b.child))
	}
	e := &eventsBalancer{}
	e.child = child.Build(&eventsCC{ClientConn: cc, parent: e}, opts)
	return e
}

// ParseConfig parses the child's config: the events policy's config is
// the child's.
func (b eventsBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	child := balancer.Get(b.child)
	if p, ok := child.(balancer.ConfigParser); ok {
		return p.ParseConfig(js)
	}
	return nil, nil
}

// eventsBalancer passes everything to the child policy, noting the sink
// the resolver state carries.
type eventsBalancer struct {
	child balancer.Balancer
	sink  atomic.Pointer[subchannelSink]
}

func (e *eventsBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if s.ResolverState.Attributes != nil {
		if sink, ok := s.ResolverState.Attributes.Value(sinkKey{}).(*subchannelSink); ok {
			e.sink.Store(sink)
		}
	}
	return e.child.UpdateClientConnState(s)
}

func (e *eventsBalancer) ResolverError(err error) { e.child.ResolverError(err) }

// UpdateSubConnState is not called: every subchannel has a StateListener.
func (e *eventsBalancer) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	e.child.UpdateSubConnState(sc, s)
}

func (e *eventsBalancer) Close() { e.child.Close() }

func (e *eventsBalancer) ExitIdle() { e.child.ExitIdle() }

// eventsCC is the child's ClientConn: the parent's, with each new
// subchannel's state listener wrapped.
type eventsCC struct {
	balancer.ClientConn
	parent *eventsBalancer
}

func (c *eventsCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	addr := ""
	if len(addrs) > 0 {
		addr = addrs[0].Addr
	}
	inner := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		c.parent.sink.Load().changed(addr, s)
		if inner != nil {
			inner(s)
		}
	}
	return c.ClientConn.NewSubConn(addrs, opts)
}

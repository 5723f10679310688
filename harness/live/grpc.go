package live

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// The gRPC load (protocol: grpc): every request is the unary call
// faultyserver.GRPCMethod, its request the path the HTTP request would
// have, paced, attributed and collected as the HTTP load is. Two kinds of
// client route it:
//   - a gRPC strategy (grpc-go's own policy): each balancer replica is one
//     grpc.ClientConn running the policy (grpcPolicyClient);
//   - a built-in strategy: the transport client picks per call and the
//     call goes over a grpc.ClientConn to that instance alone
//     (grpcBuiltinClient).

// grpcClient routes and sends the calls of one strategy's run.
type grpcClient interface {
	router
	// call sends call seq of the request at path with sreq's key and
	// returns its result (the route is kept for Take).
	call(seq uint64, path string, sreq strategies.Request) *vegeta.Result
	// setTarget points instance id at a new address (a container that
	// came back elsewhere).
	setTarget(id int, u *url.URL)
	// setHosts makes hosts (instance ids, in order) the host set.
	setHosts(hosts []int)
	// connect starts every connection and waits, until ctx is done, for
	// each client to be ready.
	connect(ctx context.Context)
	close()
}

// grpcURL is the URL raw results name for every call.
const grpcURL = "grpc://lbchaos-backend" + faultyserver.GRPCMethod

// grpcDialOptions are the options of every client connection: plain text,
// and no retries (every call is one attempt, as an HTTP request is)
// unless retry: a gRPC strategy with +retry, whose service config sets
// grpc-go's retry policy.
func grpcDialOptions(retry bool) []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if !retry {
		opts = append(opts, grpc.WithDisableRetry())
	}
	return opts
}

// grpcAnswer is what a call got back.
type grpcAnswer struct {
	instance int // named by the answer's metadata; -1: none
	peer     string
	code     codes.Code
	err      error  // the call's error (a status error); nil on OK
	server   bool   // the status is the server's (it named itself)
	load     string // faultyserver.GRPCLoadKey, "" when none
	bytesIn  int
}

// invoke makes one call of the request at path on cc.
func invoke(ctx context.Context, cc *grpc.ClientConn, path string, sreq strategies.Request, instances int) grpcAnswer {
	if sreq.HasKey {
		ctx = metadata.AppendToOutgoingContext(ctx, faultyserver.GRPCKeyKey, strconv.FormatUint(sreq.Key, 10))
	}
	var (
		hdr, trl metadata.MD
		p        peer.Peer
		out      wrapperspb.BytesValue
	)
	err := cc.Invoke(ctx, faultyserver.GRPCMethod, wrapperspb.String(path), &out, grpc.Header(&hdr), grpc.Trailer(&trl), grpc.Peer(&p))
	a := grpcAnswer{instance: -1, code: status.Code(err), err: err, bytesIn: len(out.GetValue())}
	if p.Addr != nil {
		a.peer = p.Addr.String()
	}
	// The instance's metadata is in the header, or, for a failure
	// answered Trailers-Only (one metadata block, which grpc-go hands
	// over as the trailer), in the trailer.
	for _, md := range []metadata.MD{hdr, trl} {
		if v := md.Get(faultyserver.GRPCInstanceKey); len(v) > 0 {
			if id, perr := strconv.Atoi(v[0]); perr == nil && id >= 0 && id < instances {
				a.instance, a.server = id, true
				break
			}
		}
	}
	for _, md := range []metadata.MD{hdr, trl} {
		if v := md.Get(faultyserver.GRPCLoadKey); len(v) > 0 {
			a.load = v[0]
			break
		}
	}
	// The deadline travels to the server (grpc-timeout), which may answer
	// DeadlineExceeded with its metadata just as the client's deadline
	// passes: that is still this call's timeout, not the server's answer.
	if a.server && err != nil && isCallTimeout(ctx, err) {
		a.server = false
	}
	return a
}

// httpStatus maps a gRPC status code to the HTTP status the collector,
// the strategies and raw results take (the inverse of gRPC's HTTP to gRPC
// status mapping where there is one).
func httpStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return 499
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	default: // Unknown, Internal, DataLoss
		return http.StatusInternalServerError
	}
}

// feedback returns the status and error the strategy and the collector
// see: a status the server answered with is its HTTP status and no error,
// as an HTTP answer's; any other failure (refused, reset, timeout, no
// subchannel ready) is a transport error without a status.
func (a grpcAnswer) feedback() (int, error) {
	switch {
	case a.err == nil:
		return http.StatusOK, nil
	case a.server:
		return httpStatus(a.code), nil
	default:
		return 0, a.err
	}
}

// result is the Vegeta result of a call begun at ts.
func (a grpcAnswer) result(name string, seq uint64, ts time.Time, code int) *vegeta.Result {
	r := &vegeta.Result{Attack: name, Seq: seq, Code: uint16(code), Timestamp: ts, Latency: time.Since(ts),
		BytesIn: uint64(a.bytesIn), Method: http.MethodPost, URL: grpcURL}
	if a.err != nil {
		r.Error = a.err.Error()
	}
	return r
}

// grpcBuiltinClient routes calls with a built-in strategy: the balancing
// transport picks (call seq by replica seq mod replicas), counts in-flight
// calls and reports each outcome (the answer's GRPCLoadKey as the load),
// and the call goes over one of the replica's connections grpc.ClientConns
// to the picked instance, in turn.
type grpcBuiltinClient struct {
	// Immutable after construction.
	name      string
	bal       *transport.Client
	conns     []atomic.Pointer[connSet] // by replica*instances + instance id
	perInst   int
	replicas  int
	instances int

	mu      sync.Mutex
	retired []*connSet // replaced by setTarget; closed by close
}

// connSet is one instance's client connections.
type connSet struct {
	ccs  []*grpc.ClientConn
	next atomic.Uint64
}

func newConnSet(addr string, n int) (*connSet, error) {
	s := &connSet{}
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpcDialOptions(false)...)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("gRPC client of %s: %w", addr, err)
		}
		s.ccs = append(s.ccs, cc)
	}
	return s, nil
}

func (s *connSet) pick() *grpc.ClientConn { return s.ccs[(s.next.Add(1)-1)%uint64(len(s.ccs))] }

func (s *connSet) close() {
	for _, cc := range s.ccs {
		_ = cc.Close()
	}
}

// newGRPCBuiltinClient routes with bal, whose strategy has replicas
// replicas, to targets (by instance id) over connections connections per
// replica and instance.
func newGRPCBuiltinClient(name string, bal *transport.Client, replicas int, targets []*url.URL, connections int) (*grpcBuiltinClient, error) {
	replicas = max(1, replicas)
	c := &grpcBuiltinClient{name: name, bal: bal, conns: make([]atomic.Pointer[connSet], replicas*len(targets)),
		perInst: max(1, connections), replicas: replicas, instances: len(targets)}
	for r := range replicas {
		for id, u := range targets {
			s, err := newConnSet(u.Host, c.perInst)
			if err != nil {
				c.close()
				return nil, err
			}
			c.conns[r*c.instances+id].Store(s)
		}
	}
	return c, nil
}

func (c *grpcBuiltinClient) Take(seq uint64) (*transport.Route, bool) { return c.bal.Take(seq) }
func (c *grpcBuiltinClient) InFlight() int64                          { return c.bal.InFlight() }
func (c *grpcBuiltinClient) Abort()                                   { c.bal.Abort() }

func (c *grpcBuiltinClient) call(seq uint64, path string, sreq strategies.Request) *vegeta.Result {
	ts := time.Now()
	call, err := c.bal.Begin(context.Background(), seq, true, sreq)
	if err != nil {
		return &vegeta.Result{Attack: c.name, Seq: seq, Timestamp: ts, Latency: time.Since(ts), Error: err.Error(), Method: http.MethodPost, URL: grpcURL}
	}
	r := int(seq % uint64(c.replicas)) // the replica that picked, as the transport chose it
	a := invoke(call.Context(), c.conns[r*c.instances+call.Instance()].Load().pick(), path, sreq, c.instances)
	code, ferr := a.feedback()
	call.Finish(code, a.load, ferr)
	if ferr != nil {
		code = 0
	}
	return a.result(c.name, seq, ts, code)
}

func (c *grpcBuiltinClient) setTarget(id int, u *url.URL) {
	c.bal.SetTarget(id, u)
	for r := range c.replicas {
		s, err := newConnSet(u.Host, c.perInst)
		if err != nil { // NewClient fails only on a malformed target
			return
		}
		old := c.conns[r*c.instances+id].Swap(s)
		c.mu.Lock()
		c.retired = append(c.retired, old)
		c.mu.Unlock()
	}
}

// setHosts is the strategies' business (runJoins tells them).
func (c *grpcBuiltinClient) setHosts([]int) {}

func (c *grpcBuiltinClient) connect(ctx context.Context) {
	var ccs []*grpc.ClientConn
	for i := range c.conns {
		if s := c.conns[i].Load(); s != nil {
			ccs = append(ccs, s.ccs...)
		}
	}
	waitReady(ctx, ccs)
}

func (c *grpcBuiltinClient) close() {
	for i := range c.conns {
		if s := c.conns[i].Load(); s != nil {
			s.close()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.retired {
		s.close()
	}
}

// waitReady connects every cc and waits until each is READY, or ctx is
// done.
func waitReady(ctx context.Context, ccs []*grpc.ClientConn) {
	for _, cc := range ccs {
		cc.Connect()
	}
	for _, cc := range ccs {
		for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
			if !cc.WaitForStateChange(ctx, s) {
				return
			}
		}
	}
}

// checkGRPC rejects, before anything starts, what the gRPC load cannot
// run: a proxy strategy (the proxies are configured for HTTP/1.1) and a
// gRPC strategy with load that does not speak gRPC (experiments validation
// says so first for a file; this covers an Experiment built otherwise).
func checkGRPC(exp *experiments.Experiment) error {
	for _, name := range exp.Strategies {
		switch {
		case strategies.IsGRPC(name) && exp.Protocol != experiments.ProtocolGRPC:
			return fmt.Errorf("strategy %s: a grpc-go balancer needs protocol: %s (the experiment's protocol is %s)", name, experiments.ProtocolGRPC, exp.Protocol)
		case exp.Protocol != experiments.ProtocolGRPC:
		case proxyspec.IsProxy(name):
			return fmt.Errorf("strategy %s: protocol %s: the proxies are configured for HTTP/1.1; run proxies with protocol %s", name, exp.Protocol, experiments.ProtocolHTTP1)
		case exp.Generators > 1:
			return fmt.Errorf("protocol %s: the load runs in one process; generators (%d) are not supported with it", exp.Protocol, exp.Generators)
		}
	}
	return nil
}

// parseKey parses a request's key (strategies.KeyHeader's value).
func parseKey(v string) (uint64, error) { return strconv.ParseUint(v, 10, 64) }

// pathOf returns the path (and query) of a target's URL.
func pathOf(u string) string {
	if p := strings.TrimPrefix(u, backendBase); p != "" {
		return p
	}
	return "/"
}

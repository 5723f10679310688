package live

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// testBackend is a minimal instance of faultyserver.GRPCMethod: it names
// itself in the header metadata (unless anonymous), reports its load per
// call in ORCA, and answers OK, or code, or holds the call (hang).
type testBackend struct {
	id        int
	code      codes.Code
	anonymous bool
	hang      bool
	calls     atomic.Int64
	keys      atomic.Int64 // calls that carried a key
}

func (b *testBackend) handle(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.BytesValue, error) {
	b.calls.Add(1)
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(faultyserver.GRPCKeyKey)) > 0 {
		b.keys.Add(1)
	}
	if !b.anonymous {
		_ = grpc.SetHeader(ctx, metadata.Pairs(faultyserver.GRPCInstanceKey, strconv.Itoa(b.id), faultyserver.GRPCLoadKey, "1"))
	}
	if rec := orca.CallMetricsRecorderFromContext(ctx); rec != nil {
		rec.SetApplicationUtilization(0.5)
		rec.SetQPS(100)
	}
	if b.hang {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if b.code != codes.OK {
		return nil, status.Error(b.code, "test fault")
	}
	return wrapperspb.Bytes([]byte("ok:" + req.GetValue())), nil
}

var testServiceDesc = grpc.ServiceDesc{
	ServiceName: faultyserver.GRPCService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: faultyserver.GRPCMethodName, Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		return srv.(*testBackend).handle(ctx, in)
	}}},
}

// startGRPCBackends starts n test backends, configured by setup, and
// returns them and their base URLs; they stop when the test ends.
func startGRPCBackends(t testing.TB, n int, setup func(b *testBackend)) ([]*testBackend, []*url.URL) {
	t.Helper()
	var (
		bs   []*testBackend
		urls []*url.URL
	)
	for id := range n {
		b := &testBackend{id: id}
		if setup != nil {
			setup(b)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(orca.CallMetricsServerOption(nil))
		srv.RegisterService(&testServiceDesc, b)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		bs, urls = append(bs, b), append(urls, &url.URL{Scheme: "http", Host: lis.Addr().String()})
	}
	return bs, urls
}

func newTestPolicyClient(t *testing.T, name string, replicas int, urls []*url.URL, hosts []int, timeout time.Duration) (*grpcPolicyClient, *engine.EventLog) {
	t.Helper()
	events := engine.NewEventLog(time.Now())
	var armed atomic.Bool
	armed.Store(true)
	c, err := newGRPCPolicyClient(name, replicas, urls, hosts, timeout, events, &armed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.connect(ctx)
	return c, events
}

// calls makes n calls (seq from first on) on c and returns, per instance
// attributed, the results.
func calls(t *testing.T, c grpcClient, first, n uint64, key bool) map[int][]*vegeta.Result {
	t.Helper()
	got := map[int][]*vegeta.Result{}
	for seq := first; seq < first+n; seq++ {
		var sreq strategies.Request
		if key {
			sreq = strategies.Request{Key: seq % 7, HasKey: true}
		}
		res := c.call(seq, "/item", sreq)
		if res.Seq != seq || res.Attack == "" || res.URL != grpcURL {
			t.Fatalf("result %+v of call %d", res, seq)
		}
		rt, ok := c.Take(seq)
		if !ok {
			t.Fatalf("call %d: no route", seq)
		}
		if _, again := c.Take(seq); again {
			t.Fatalf("call %d: route taken twice", seq)
		}
		got[rt.Instance] = append(got[rt.Instance], res)
	}
	if n := c.InFlight(); n != 0 {
		t.Errorf("%d calls in flight after all returned", n)
	}
	return got
}

func TestGRPCPolicyRoundRobin(t *testing.T) {
	checkLeaks(t)
	bs, urls := startGRPCBackends(t, 3, func(b *testBackend) {
		if b.id == 0 {
			b.code = codes.Unavailable
		}
	})
	c, events := newTestPolicyClient(t, "grpc:round_robin", 1, urls, []int{0, 1, 2}, 5*time.Second)
	// The ClientConn is ready with its first subchannel; wait for all.
	ready := map[int]bool{}
	for deadline := time.Now().Add(5 * time.Second); len(ready) < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evs, _ := events.Sorted()
		for _, e := range evs {
			if e.Kind == EventSubchannelReady {
				ready[e.Instance] = true
			}
		}
	}
	if len(ready) != 3 {
		evs, _ := events.Sorted()
		t.Fatalf("subchannel-ready events for instances %v, want 0, 1 and 2; events: %+v", ready, evs)
	}
	got := calls(t, c, 0, 30, false)
	for id, b := range bs {
		if n := len(got[id]); n != 10 || b.calls.Load() != 10 {
			t.Errorf("instance %d: %d calls attributed, %d served; want 10 (round robin)", id, n, b.calls.Load())
		}
	}
	for _, r := range got[0] {
		if r.Code != http.StatusServiceUnavailable || !strings.Contains(r.Error, "Unavailable") {
			t.Errorf("faulty instance's result: code %d, error %q; want 503 and the status", r.Code, r.Error)
		}
	}
	for _, r := range got[1] {
		if r.Code != http.StatusOK || r.Error != "" || r.BytesIn == 0 {
			t.Errorf("healthy instance's result: code %d, error %q, %d bytes", r.Code, r.Error, r.BytesIn)
		}
	}
	evs, _ := events.Sorted()
	connecting := 0
	for _, e := range evs {
		if e.Kind == EventSubchannelConnecting {
			connecting++
		}
	}
	if connecting != 3 {
		t.Errorf("%d subchannel-connecting events, want 3; events: %+v", connecting, evs)
	}
}

func TestGRPCPolicyPickFirstAndJoin(t *testing.T) {
	checkLeaks(t)
	bs, urls := startGRPCBackends(t, 3, nil)
	// Instance 1 is first in the host set; 0 joins later, in front.
	c, _ := newTestPolicyClient(t, "grpc:pick_first", 2, urls, []int{1, 2}, 5*time.Second)
	got := calls(t, c, 0, 20, false)
	if len(got[1]) != 20 {
		t.Fatalf("pick_first: calls per instance %v, want all 20 on instance 1 (the first address)", counts(got))
	}
	c.setHosts([]int{0, 1, 2})
	// pick_first keeps its connection while that address stays listed.
	got = calls(t, c, 20, 20, false)
	if len(got[1]) != 20 || bs[0].calls.Load() != 0 {
		t.Errorf("after the join: calls per instance %v, want all on instance 1", counts(got))
	}
	c.setHosts([]int{0, 2})
	deadline := time.Now().Add(5 * time.Second)
	for bs[0].calls.Load() == 0 && time.Now().Before(deadline) {
		calls(t, c, 100, 1, false)
	}
	if bs[0].calls.Load() == 0 {
		t.Errorf("instance 1 left the host set, yet pick_first never moved to instance 0 (the first address)")
	}
}

// Every gRPC policy a spec can name runs in grpc-go with the config the
// spec writes, and calls go through.
func TestGRPCPolicies(t *testing.T) {
	checkLeaks(t)
	bs, urls := startGRPCBackends(t, 3, nil)
	for _, spec := range []string{
		"grpc:pick_first(shuffle_address_list=true)",
		"grpc:round_robin",
		"grpc:weighted_round_robin(blackout_period=100ms,weight_update_period=100ms,weight_expiration_period=1m,error_utilization_penalty=0)",
		"grpc:least_request_experimental(choice_count=3)",
		"grpc:ring_hash_experimental(min_ring_size=64,max_ring_size=256)",
	} {
		t.Run(spec, func(t *testing.T) {
			before := bs[0].keys.Load() + bs[1].keys.Load() + bs[2].keys.Load()
			c, _ := newTestPolicyClient(t, spec, 1, urls, []int{0, 1, 2}, 5*time.Second)
			got := calls(t, c, 0, 30, true)
			ok := 0
			for _, rs := range got {
				for _, r := range rs {
					if r.Code == http.StatusOK {
						ok++
					}
				}
			}
			if ok != 30 || len(got[-1]) != 0 {
				t.Errorf("%d of 30 calls OK, %d unattributed; per instance %v", ok, len(got[-1]), counts(got))
			}
			if keys := bs[0].keys.Load() + bs[1].keys.Load() + bs[2].keys.Load() - before; keys != 30 {
				t.Errorf("%d calls carried their key in %s, want 30", keys, faultyserver.GRPCKeyKey)
			}
		})
	}
}

// ring_hash hashes the key header: one key, one instance.
func TestGRPCRingHashAffinity(t *testing.T) {
	checkLeaks(t)
	_, urls := startGRPCBackends(t, 3, nil)
	c, _ := newTestPolicyClient(t, "grpc:ring_hash_experimental", 1, urls, []int{0, 1, 2}, 5*time.Second)
	home := map[uint64]int{}
	used := map[int]bool{}
	// ring_hash connects lazily: the first calls of a key may land on
	// another instance while its subchannel connects.
	for round := range 3 {
		for k := range uint64(12) {
			seq := uint64(round)*100 + k
			c.call(seq, "/", strategies.Request{Key: k, HasKey: true})
			rt, _ := c.Take(seq)
			if round < 2 {
				home[k] = rt.Instance
				continue
			}
			used[rt.Instance] = true
			if rt.Instance != home[k] {
				t.Errorf("key %d went to instance %d, before to %d", k, rt.Instance, home[k])
			}
		}
	}
	if len(used) < 2 {
		t.Errorf("12 keys all on instances %v; want them spread", used)
	}
}

// A call without the instance's metadata is attributed by its peer's
// address; one that hits the timeout is a timeout without a status; an
// interrupted run aborts the calls under way.
func TestGRPCPolicyAttribution(t *testing.T) {
	checkLeaks(t)
	_, urls := startGRPCBackends(t, 1, func(b *testBackend) { b.anonymous = true })
	c, _ := newTestPolicyClient(t, "grpc:round_robin", 1, urls, []int{0}, 5*time.Second)
	got := calls(t, c, 0, 3, false)
	if len(got[0]) != 3 {
		t.Errorf("anonymous answers per instance %v, want all 3 on instance 0 (by peer address)", counts(got))
	}

	_, hung := startGRPCBackends(t, 1, func(b *testBackend) { b.hang = true })
	c, _ = newTestPolicyClient(t, "grpc:pick_first", 1, hung, []int{0}, 100*time.Millisecond)
	res := c.call(7, "/", strategies.Request{})
	rt, _ := c.Take(7)
	if res.Code != 0 || !strings.Contains(res.Error, "DeadlineExceeded") || !rt.Timeout.Load() || rt.Aborted.Load() {
		t.Errorf("timed out call: code %d, error %q, timeout %v, aborted %v", res.Code, res.Error, rt.Timeout.Load(), rt.Aborted.Load())
	}

	c, _ = newTestPolicyClient(t, "grpc:pick_first", 1, hung, []int{0}, time.Minute)
	time.AfterFunc(50*time.Millisecond, c.Abort)
	c.call(8, "/", strategies.Request{})
	rt, _ = c.Take(8)
	if !rt.Aborted.Load() || rt.Timeout.Load() {
		t.Errorf("interrupted call: aborted %v, timeout %v; want aborted only", rt.Aborted.Load(), rt.Timeout.Load())
	}
}

// With a built-in strategy the transport client picks per call: the
// failures eject the fast-failing instance, and the in-flight count returns
// to zero.
func TestGRPCBuiltinEject(t *testing.T) {
	checkLeaks(t)
	bs, urls := startGRPCBackends(t, 3, func(b *testBackend) {
		if b.id == 0 {
			b.code = codes.Unavailable
		}
	})
	name := "round-robin+eject(consecutive=3,duration=1m)"
	lbs, err := strategies.New(name, strategies.Env{N: 3, Rand: engine.StrategySeed(1, name)})
	if err != nil {
		t.Fatal(err)
	}
	bal := transport.NewClient([]*strategies.Balancer{lbs}, urls, 5*time.Second, 0)
	defer bal.CloseIdleConnections()
	c, err := newGRPCBuiltinClient(name, bal, 1, urls, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.connect(ctx)
	cancel()
	got := calls(t, c, 0, 60, false)
	if n := bs[0].calls.Load(); n != 3 {
		t.Errorf("faulty instance served %d calls, want 3 (ejected after 3 consecutive failures)", n)
	}
	if len(got[1])+len(got[2]) != 57 || len(got[0]) != 3 {
		t.Errorf("calls per instance %v", counts(got))
	}
	if lbs.Ejections() != 1 {
		t.Errorf("%d ejections, want 1", lbs.Ejections())
	}
	for _, r := range got[0] {
		if r.Code != http.StatusServiceUnavailable {
			t.Errorf("faulty instance's result code %d, want 503", r.Code)
		}
	}
}

func counts(m map[int][]*vegeta.Result) map[int]int {
	out := map[int]int{}
	for id, rs := range m {
		out[id] = len(rs)
	}
	return out
}

func TestHTTPStatusOfGRPCCodes(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want int
	}{
		{codes.OK, 200}, {codes.Unavailable, 503}, {codes.DeadlineExceeded, 504}, {codes.ResourceExhausted, 429},
		{codes.Unimplemented, 501}, {codes.Internal, 500}, {codes.Unknown, 500}, {codes.NotFound, 404}, {codes.Canceled, 499},
	} {
		if got := httpStatus(tc.code); got != tc.want {
			t.Errorf("httpStatus(%v) = %d, want %d", tc.code, got, tc.want)
		}
	}
}

// The gRPC attacker paces calls as Vegeta does: open loop (a slow call
// does not hold the next), numbered from 0, and stops at Stop.
func TestGRPCAttackerPaces(t *testing.T) {
	checkLeaks(t)
	sched := engine.NewSchedule("constant", 200, 1)
	a := newGRPCAttacker()
	began := time.Now()
	results := a.attack(engine.Until(sched, 500*time.Millisecond), time.Second, func(seq uint64) *vegeta.Result {
		time.Sleep(200 * time.Millisecond) // longer than the run's gaps
		return &vegeta.Result{Seq: seq, Timestamp: time.Now()}
	})
	seen := map[uint64]bool{}
	for r := range results {
		seen[r.Seq] = true
	}
	took := time.Since(began)
	if len(seen) < 95 || len(seen) > 101 {
		t.Errorf("%d calls in 0.5 s at 200/s, want about 100", len(seen))
	}
	for seq := range uint64(len(seen)) {
		if !seen[seq] {
			t.Fatalf("call %d missing of %d", seq, len(seen))
		}
	}
	if took > 3*time.Second { // one after the other they would take 20 s
		t.Errorf("attack took %v: calls were not concurrent", took)
	}

	a = newGRPCAttacker()
	results = a.attack(engine.Until(sched, time.Minute), 0, func(seq uint64) *vegeta.Result { return &vegeta.Result{Seq: seq} })
	time.AfterFunc(100*time.Millisecond, func() { a.Stop() })
	n := 0
	for range results {
		n++
	}
	if n == 0 || n > 100 || a.Stop() {
		t.Errorf("stopped attack: %d results (want about 20), Stop again = true", n)
	}
}

// checkLeaks fails t if goroutines it started outlive it, its cleanups
// (the backends' shutdown) included.
func checkLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// An instance that goes away shows in the policy's subchannel events,
// attributed to it, and the policy stops picking it.
func TestGRPCSubchannelEventsOnLoss(t *testing.T) {
	checkLeaks(t)
	bs, urls := startGRPCBackends(t, 2, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	gone := &testBackend{id: 2}
	srv.RegisterService(&testServiceDesc, gone)
	go func() { _ = srv.Serve(lis) }()
	urls = append(urls, &url.URL{Scheme: "http", Host: lis.Addr().String()})
	c, events := newTestPolicyClient(t, "grpc:round_robin", 1, urls, []int{0, 1, 2}, 5*time.Second)
	calls(t, c, 0, 30, false)
	srv.Stop()
	var kinds map[string]bool
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evs, _ := events.Sorted()
		kinds = map[string]bool{}
		for _, e := range evs {
			if e.Instance == 2 {
				kinds[e.Kind] = true
			}
		}
		if kinds[EventSubchannelIdle] || kinds[EventSubchannelTransientFailure] {
			break
		}
	}
	if !kinds[EventSubchannelIdle] && !kinds[EventSubchannelTransientFailure] {
		t.Fatalf("instance 2's subchannel events after it stopped: %v, want idle or transient-failure", kinds)
	}
	before := bs[0].calls.Load() + bs[1].calls.Load()
	got := calls(t, c, 100, 20, false)
	if len(got[2]) != 0 || bs[0].calls.Load()+bs[1].calls.Load()-before != 20 {
		t.Errorf("after instance 2 went away: calls per instance %v, want all on 0 and 1", counts(got))
	}
}

func TestCheckGRPC(t *testing.T) {
	for _, tc := range []struct {
		name       string
		protocol   string
		generators int
		strategies []string
		want       string // "" = accepted
	}{
		{name: "grpc policies and built-ins", protocol: "grpc", strategies: []string{"grpc:round_robin", "p2c"}},
		{name: "http1 built-ins", protocol: "http1", strategies: []string{"p2c", "nginx:round_robin"}},
		{name: "policy on http1", protocol: "http1", strategies: []string{"p2c", "grpc:pick_first"},
			want: "strategy grpc:pick_first: a grpc-go balancer needs protocol: grpc (the experiment's protocol is http1)"},
		{name: "policy on h2c", protocol: "h2c", strategies: []string{"grpc:round_robin"}, want: "needs protocol: grpc (the experiment's protocol is h2c)"},
		{name: "proxy on grpc", protocol: "grpc", strategies: []string{"nginx:round_robin"},
			want: "strategy nginx:round_robin: protocol grpc: the proxies are configured for HTTP/1.1"},
		{name: "generators", protocol: "grpc", generators: 2, strategies: []string{"p2c"}, want: "protocol grpc: the load runs in one process; generators (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := &experiments.Experiment{Protocol: tc.protocol, Generators: tc.generators, Strategies: tc.strategies}
			err := checkGRPC(exp)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

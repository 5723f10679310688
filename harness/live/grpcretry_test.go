package live

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc/codes"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
)

// lbchaosInstance is a real lbchaos instance (faultyserver.Server) served
// as the process provider and lbchaos serve serve it (HTTP/1.1 and h2c on
// one loopback port), counting the gRPC attempts it receives that are
// retries (grpc-go's grpc-previous-rpc-attempts request header).
type lbchaosInstance struct {
	srv     *faultyserver.Server
	retries atomic.Int64
}

func (in *lbchaosInstance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n, err := strconv.Atoi(r.Header.Get("Grpc-Previous-Rpc-Attempts")); err == nil && n > 0 {
		in.retries.Add(1)
	}
	in.srv.ServeHTTP(w, r)
}

// attempts is the gRPC calls the instance answered, retries included.
func (in *lbchaosInstance) attempts() int64 {
	st := in.srv.Stats()
	return st.Served + st.Failed
}

// startLbchaosFleet starts n lbchaos instances, instance id with fault
// faults[id] (nil: none), and returns them and their base URLs; they stop
// when the test ends.
func startLbchaosFleet(t *testing.T, n int, faults map[int]faultyserver.Fault) ([]*lbchaosInstance, []*url.URL) {
	t.Helper()
	var (
		ins  []*lbchaosInstance
		urls []*url.URL
	)
	for id := range n {
		srv, err := faultyserver.New(faultyserver.Config{ID: id, Workers: 8, Service: faultyserver.Fixed(200 * time.Microsecond), Seed: uint64(id) + 1})
		if err != nil {
			t.Fatal(err)
		}
		if f := faults[id]; f != nil {
			if err := srv.SetFault(f); err != nil {
				t.Fatal(err)
			}
		}
		in := &lbchaosInstance{srv: srv}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: in, Protocols: faultyserver.Protocols(), ConnContext: faultyserver.ConnContext}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("instance %d: %v", id, err)
			}
		}()
		t.Cleanup(func() {
			srv.Close()
			_ = hs.Close()
			<-done
			srv.Release()
		})
		ins, urls = append(ins, in), append(urls, &url.URL{Scheme: "http", Host: ln.Addr().String()})
	}
	return ins, urls
}

// concurrentCalls makes workers × each calls on c, from workers goroutines
// at once, and returns their results and routes' instances.
func concurrentCalls(c grpcClient, workers, each int) ([]*vegeta.Result, []int) {
	n := workers * each
	res, inst := make([]*vegeta.Result, n), make([]int, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				seq := uint64(w*each + i)
				res[seq] = c.call(seq, "/item", strategies.Request{})
				inst[seq] = -2
				if rt, ok := c.Take(seq); ok {
					inst[seq] = rt.Instance
				}
			}
		})
	}
	wg.Wait()
	return res, inst
}

var failUnavailable = faultyserver.Fail{Status: http.StatusServiceUnavailable} // no delay; UNAVAILABLE over gRPC

// TestGRPCRetryRoundRobin: grpc:round_robin+retry against four real
// lbchaos instances, instance 0 failing every call UNAVAILABLE. A call
// that fails there is retried with a new pick of round_robin's, which
// lands on another instance most of the time: nearly every call is
// answered OK, where without +retry a quarter fail. Nothing excludes the
// failing instance from the retry's pick: with calls from several
// goroutines, some retries land on instance 0 again. At the servers,
// every failure of instance 0 but a call's last was followed by a retry.
func TestGRPCRetryRoundRobin(t *testing.T) {
	checkLeaks(t)
	ins, urls := startLbchaosFleet(t, 4, map[int]faultyserver.Fault{0: failUnavailable})
	hosts := []int{0, 1, 2, 3}
	const workers, each = 8, 50
	const n = workers * each

	plain, _ := newTestPolicyClient(t, "grpc:round_robin", 1, urls, hosts, 5*time.Second)
	res, _ := concurrentCalls(plain, workers, each)
	plainFailed := 0
	for _, r := range res {
		if r.Code != http.StatusOK {
			plainFailed++
		}
	}
	for _, in := range ins {
		in.srv.Reset()
		in.retries.Store(0)
	}
	if err := ins[0].srv.SetFault(failUnavailable); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	c, _ := newTestPolicyClient(t, "grpc:round_robin+retry(max_attempts=3,codes=UNAVAILABLE)", 1, urls, hosts, 5*time.Second)
	res, inst := concurrentCalls(c, workers, each)
	took := time.Since(began)
	ok, failed := 0, 0
	for i, r := range res {
		switch {
		case r.Code == http.StatusOK:
			ok++
			if inst[i] < 1 {
				t.Errorf("call %d: OK attributed to instance %d, want a healthy one", i, inst[i])
			}
		case r.Code == http.StatusServiceUnavailable && inst[i] == 0:
			failed++ // 3 attempts, all on instance 0
		default:
			t.Errorf("call %d: code %d, error %q, attributed to %d; want OK, or 503 from instance 0", i, r.Code, r.Error, inst[i])
		}
	}
	var attempts, served, retries int64
	for _, in := range ins {
		attempts += in.attempts()
		served += in.srv.Stats().Served
		retries += in.retries.Load()
	}
	fails0 := ins[0].srv.Stats().Failed
	t.Logf("%d calls in %v: %d OK, %d failed (without +retry %d failed); %d attempts, %d retries, %d of them on instance 0; instance 0 answered %d attempts",
		n, took.Round(time.Millisecond), ok, failed, plainFailed, attempts, retries, ins[0].retries.Load(), fails0)

	if plainFailed < n/8 {
		t.Errorf("without +retry %d of %d calls failed, want about a quarter", plainFailed, n)
	}
	if ok < n*95/100 {
		t.Errorf("with +retry %d of %d calls OK, want at least 95%%", ok, n)
	}
	if served != int64(ok) || attempts != n+retries {
		t.Errorf("servers: %d served, %d attempts, %d retries; want %d served (the OK calls) and %d + the retries attempts", served, attempts, retries, ok, n)
	}
	// Each failure of instance 0 was retried, except a failed call's last.
	if fails0 != retries+int64(failed) {
		t.Errorf("instance 0 failed %d attempts; want %d retries + %d failed calls", fails0, retries, failed)
	}
	if fails0 < n/8 {
		t.Errorf("instance 0 answered %d attempts, want about a quarter of the calls' first attempts", fails0)
	}
	if ins[0].retries.Load() == 0 {
		t.Errorf("no retry landed on instance 0: grpc-go's retry is a new pick, which excludes no instance")
	}
}

// TestGRPCRetryPickFirstAndThrottling: grpc:pick_first+retry pins every
// attempt of a call to the first instance, failing: each call makes
// max_attempts attempts there, two of them retries. +throttling stops the
// retries as grpc-go's token bucket runs down: 10 tokens, each failed
// attempt takes one, a retry only while more than 5 remain, so the calls
// make 3, 2 and then 1 attempt.
func TestGRPCRetryPickFirstAndThrottling(t *testing.T) {
	checkLeaks(t)
	const retry = "+retry(max_attempts=3,initial_backoff=2ms,max_backoff=5ms,codes=UNAVAILABLE)"
	for _, tc := range []struct {
		spec     string
		attempts []int64 // instance 0's attempts after each call
	}{
		{"grpc:pick_first" + retry, []int64{3, 6, 9, 12, 15}},
		{"grpc:pick_first" + retry + "+throttling(max_tokens=10,token_ratio=0.1)", []int64{3, 5, 6, 7, 8}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			ins, urls := startLbchaosFleet(t, 2, map[int]faultyserver.Fault{0: failUnavailable})
			c, _ := newTestPolicyClient(t, tc.spec, 1, urls, []int{0, 1}, 5*time.Second)
			for i, want := range tc.attempts {
				seq := uint64(i)
				r := c.call(seq, "/item", strategies.Request{})
				rt, _ := c.Take(seq)
				if r.Code != http.StatusServiceUnavailable || rt == nil || rt.Instance != 0 {
					t.Fatalf("call %d: code %d (%s), route %+v; want 503 attributed to instance 0", i, r.Code, r.Error, rt)
				}
				if got := ins[0].srv.Stats().Failed; got != want {
					t.Errorf("after call %d instance 0 received %d attempts, want %d", i, got, want)
				}
			}
			if got := ins[1].attempts(); got != 0 {
				t.Errorf("instance 1 received %d attempts, want none (pick_first)", got)
			}
			want := tc.attempts[len(tc.attempts)-1] - int64(len(tc.attempts))
			if got := ins[0].retries.Load(); got != want {
				t.Errorf("instance 0 received %d retries, want %d", got, want)
			}
			// The failure's metadata came Trailers-Only, as trailer
			// metadata: the harness reads the instance and load there.
			a := invoke(t.Context(), c.replicas[0], "/item", strategies.Request{}, 2)
			if a.code != codes.Unavailable || a.instance != 0 || !a.server || a.load == "" {
				t.Errorf("invoke: %+v; want UNAVAILABLE from instance 0 with its load", a)
			}
		})
	}
}

// TestGRPCRetrySpecRefused: a grpc: strategy whose +retry grpc-go would
// refuse, or clamp, is refused before any channel is made.
func TestGRPCRetrySpecRefused(t *testing.T) {
	for _, spec := range []string{
		"grpc:round_robin+retry(max_attempts=6)",
		"grpc:round_robin+hedge",
		"grpc:round_robin+throttling",
	} {
		_, err := newGRPCPolicyClient(spec, 1, nil, nil, time.Second, nil, nil)
		if err == nil {
			t.Errorf("%s: no error", spec)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, spec+": ") {
			t.Errorf("%s: error %q does not start with the spec", spec, msg)
		}
	}
}

package faultyserver

import (
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // registers weighted_round_robin
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// TestGRPCWeightedRoundRobinReadsORCA: grpc-go's own weighted_round_robin,
// fed the per-call load reports, sends most calls to the instance that
// serves them faster (weight = rps / utilization, about 1 / service time
// per worker): the reports are what it consumes.
func TestGRPCWeightedRoundRobinReadsORCA(t *testing.T) {
	var addrs []resolver.Endpoint
	for i, d := range []time.Duration{ms(1), ms(8)} {
		s, err := New(Config{ID: i, Workers: 1, Service: Fixed(d)})
		if err != nil {
			t.Fatal(err)
		}
		base, _ := serveForTest(t, s)
		addrs = append(addrs, resolver.Endpoint{Addresses: []resolver.Address{{Addr: strings.TrimPrefix(base, "http://")}}})
	}
	r := manual.NewBuilderWithScheme("lbchaos")
	r.InitialState(resolver.State{Endpoints: addrs})
	cc, err := grpc.NewClient(r.Scheme()+":///backends", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0s","weightUpdatePeriod":"0.1s"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()

	var mu sync.Mutex
	count := map[string]int{}
	warm := time.Now().Add(400 * time.Millisecond)
	end := warm.Add(800 * time.Millisecond)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(end) {
				res := call(t.Context(), cc)
				if res.err != nil {
					t.Error(res.err)
					return
				}
				if time.Now().After(warm) {
					mu.Lock()
					count[res.instance]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	// Round robin would split the calls evenly; the weights are about 8:1.
	if count["0"] < 3*count["1"] {
		t.Errorf("calls per instance after warm-up %v, want instance 0 (1ms) to get over 3 times instance 1's (8ms)", count)
	}
	t.Logf("calls per instance after warm-up: %v", count)
}

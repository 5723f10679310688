package live

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/netfault"
)

// needFilter skips t unless this process can change the packet filter,
// and returns this process's owner string, which marks its rules.
func needFilter(t *testing.T) string {
	t.Helper()
	if err := netfault.Available(); err != nil {
		t.Skipf("network faults: loss %v", err)
	}
	self, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// ownRules lists the packet filter lines of this process's runs.
func ownRules(t *testing.T, self string) []string {
	t.Helper()
	left, err := netfault.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, l := range left {
		if strings.Contains(l, "owner="+self+" ") || strings.Contains(l, "owner="+self+`"`) {
			mine = append(mine, l)
		}
	}
	return mine
}

// A loss window is in the packet filter from its at to its until, and
// nothing of the run is left after it; the instance under loss has
// requests late by a retransmission.
func TestRunLossWindowOnProcessBackends(t *testing.T) {
	self := needFilter(t)
	exp := runtest.MustExperiment(t, "lossy", `
seed: 3
duration: 2500ms
rate: 300
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 0, at: 500ms, until: 1500ms, fault: {mode: loss, p: 0.2}}
strategies: [round-robin]
`)
	var (
		mu      sync.Mutex
		samples = map[string][]string{}
	)
	sample := func(name string) {
		rules := ownRules(t, self)
		mu.Lock()
		samples[name] = rules
		mu.Unlock()
	}
	// Sampled from the start of the strategy's run, which follows the
	// backends' start by a few milliseconds.
	t1 := time.AfterFunc(1100*time.Millisecond, func() { sample("during") })
	t2 := time.AfterFunc(2200*time.Millisecond, func() { sample("after until") })
	defer t1.Stop()
	defer t2.Stop()
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	keyed := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "-instance-0") {
				n++
			}
		}
		return n
	}
	if n := keyed(samples["during"]); n != 2 {
		t.Errorf("during the window, %d rules of instance 0, want 2 (both directions):\n%s", n, strings.Join(samples["during"], "\n"))
	}
	if n := keyed(samples["after until"]); n != 0 || len(samples["after until"]) == 0 {
		t.Errorf("after the window, %d rules of instance 0 and %d lines of the run, want 0 and the chain:\n%s",
			n, len(samples["after until"]), strings.Join(samples["after until"], "\n"))
	}
	if left := ownRules(t, self); len(left) > 0 {
		t.Errorf("after the run, iptables -S still has:\n%s", strings.Join(left, "\n"))
	}
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	if in := st.Instances[0]; in.LatencyMs.Max < 200 || in.Errors > 0 {
		t.Errorf("instance 0 under loss: max %.1f ms, %d errors; want a retransmission's 200 ms and no error", in.LatencyMs.Max, in.Errors)
	}
	if in := st.Instances[1]; in.LatencyMs.P99 >= 200 {
		t.Errorf("instance 1, without loss: p99 %.1f ms", in.LatencyMs.P99)
	}
}

// An interrupted run (Ctrl-C) removes its rules on its way out.
func TestRunInterruptRemovesNetworkRules(t *testing.T) {
	self := needFilter(t)
	exp := runtest.MustExperiment(t, "cut", `
duration: 30s
rate: 200
instances: {count: 2, service: {dist: fixed, value: 1ms}}
timeout: 500ms
faults:
  - {instance: 1, at: 0s, fault: {mode: syn-drop}}
strategies: [round-robin, p2c]
`)
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan []string, 1)
	time.AfterFunc(600*time.Millisecond, func() {
		sampled <- ownRules(t, self)
		cancel()
	})
	_, err := run(ctx, exp, Options{})
	if !errors.Is(err, harness.ErrInterrupted) {
		t.Fatalf("err = %v, want harness.ErrInterrupted", err)
	}
	during := <-sampled
	if !strings.Contains(strings.Join(during, "\n"), "--tcp-flags FIN,SYN,RST,ACK SYN") {
		t.Errorf("while the run went on, no SYN rule of it:\n%s", strings.Join(during, "\n"))
	}
	if left := ownRules(t, self); len(left) > 0 {
		t.Errorf("after the interrupt, iptables -S still has:\n%s", strings.Join(left, "\n"))
	}
}

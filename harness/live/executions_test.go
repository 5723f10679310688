package live

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

func TestTally(t *testing.T) {
	for _, c := range []struct {
		lists [][]uint64
		dup   int64
		times []int64
	}{
		{nil, 0, []int64{0, 0}},
		{[][]uint64{{1, 2, 3}, {4, 5}}, 0, []int64{0, 5}},
		{[][]uint64{{1, 2, 3}, {3, 4}}, 1, []int64{0, 3, 1}},
		{[][]uint64{{7, 7, 7}, {7}}, 1, []int64{0, 0, 0, 0, 1}},      // four executions of one id: one duplicate
		{[][]uint64{{9, 1, 9, 2}, {2, 1}, {3}}, 3, []int64{0, 1, 3}}, // 9 twice on one, 1 and 2 on both
	} {
		dup, times := tally(c.lists)
		if dup != c.dup || !slices.Equal(times, c.times) {
			t.Errorf("tally(%v) = %d, %v; want %d, %v", c.lists, dup, times, c.dup, c.times)
		}
	}
	// 100 requests: 2 executed by no instance, 90 once, 7 twice, 1 four
	// times.
	ex := &executions{times: []int64{0, 90, 7, 0, 1}}
	got := ex.perRequest(100)
	want := &reports.AttemptStats{Mean: (90 + 14 + 4) / 100.0, P99: 2, Max: 4}
	if *got != *want {
		t.Errorf("perRequest = %+v, want %+v", *got, *want)
	}
	if ex.perRequest(0) != nil {
		t.Error("perRequest(0) is not nil")
	}
}

// Two real instances and a scripted client: request ids 0-99 go once to
// one instance or the other; ids 10-14 go to both, 20, 22 and 24 twice
// to instance 0 (20 the second time against a failing fault: still
// executed) and id 30 three times, once to instance 1. The harness's count must be
// exactly the scripted 5 + 3 + 1 duplicates, and each instance's count its
// scripted executions.
func TestScriptedDoubleExecutions(t *testing.T) {
	ctx := context.Background()
	exp := &experiments.Experiment{Instances: experiments.Instances{Count: 2, Workers: 4, Service: faultyserver.Fixed(0)}}
	fl, err := process.Provider{}.Start(ctx, fleet.Spec{Instances: exp.Instances, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	b := fl.Backends()
	client := &http.Client{}
	defer client.CloseIdleConnections()
	send := func(inst, seq int) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b[inst].URL.String()+"/orders", strings.NewReader(`{"item":1}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(faultyserver.SeqHeader, strconv.Itoa(seq))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("instance %d, id %d: %v", inst, seq, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := map[int]int64{}
	script := func(inst, seq int) { send(inst, seq); want[inst]++ }
	for seq := range 100 {
		script(seq%2, seq)
	}
	for seq := 10; seq < 15; seq++ {
		script(1-seq%2, seq) // the other instance too
	}
	if err := b[0].Control.SetFault(ctx, faultyserver.Fail{Status: 503}); err != nil {
		t.Fatal(err)
	}
	script(0, 20) // a failed execution is an execution
	if err := b[0].Control.ClearFault(ctx); err != nil {
		t.Fatal(err)
	}
	script(0, 22)
	script(0, 24)
	script(0, 30)
	script(1, 30)

	if why := executionsMeasurable(exp); why != "" {
		t.Fatalf("executionsMeasurable: %s", why)
	}
	ex, err := readExecutions(ctx, fl)
	if err != nil {
		t.Fatal(err)
	}
	if ex.duplicates != 5+3+1 {
		t.Errorf("duplicates %d, want %d", ex.duplicates, 5+3+1)
	}
	for id, n := range want {
		if ex.perInstance[id] != n {
			t.Errorf("instance %d executed %d, want %d", id, ex.perInstance[id], n)
		}
	}

	// A reset (the next strategy's fresh state) starts the counts afresh.
	for _, be := range b {
		if err := be.Control.Reset(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ex, err := readExecutions(ctx, fl); err != nil || ex.duplicates != 0 || ex.perInstance[0]+ex.perInstance[1] != 0 {
		t.Errorf("after reset: %+v, %v; want nothing", ex, err)
	}
}

func TestExecutionsMeasurable(t *testing.T) {
	for _, c := range []struct {
		exp  experiments.Experiment
		want string // part of the reason; "" = measurable
	}{
		{experiments.Experiment{}, ""},
		{experiments.Experiment{Protocol: experiments.ProtocolGRPC}, "gRPC"},
		{experiments.Experiment{Generators: 3}, "generators"},
		{experiments.Experiment{Instances: experiments.Instances{External: []experiments.External{{URL: "http://x:1"}}}}, "sidecar"},
		{experiments.Experiment{Faults: []experiments.Fault{{Spec: faultyserver.Kill{}}}}, "restarts"},
	} {
		got := executionsMeasurable(&c.exp)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("executionsMeasurable(%+v) = %q, want %q", c.exp, got, c.want)
		}
	}
}

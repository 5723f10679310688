package main

import (
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestListStrategiesNamesTheRegistry: lbchaos list strategies prints one
// line for every base strategy, wrapper, proxy kind and gRPC balancer the
// registry knows, each with a description.
func TestListStrategiesNamesTheRegistry(t *testing.T) {
	out, _, err := runCLI(t, context.Background(), "list", "strategies")
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{} // a line's first field -> the line
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 {
			t.Errorf("line without a kind and a description: %q", line)
			continue
		}
		first[fields[0]] = line
	}
	var want []string
	want = append(want, strategies.Names()...)
	for _, w := range strategies.WrapperNames() {
		want = append(want, "+"+w)
	}
	for _, p := range strategies.GRPCPolicies() {
		want = append(want, strategies.GRPCPrefix+p)
	}
	for _, kind := range proxyspec.Kinds() {
		algs := proxyspec.Algorithms(kind)
		if kind == proxyspec.Lbchaos {
			algs = []string{"STRATEGY"}
		}
		if len(algs) == 0 {
			t.Errorf("proxy kind %s has no algorithms", kind)
		}
		for _, a := range algs {
			if a == proxyspec.File {
				a += "(path=FILE)"
			}
			want = append(want, kind+":"+a)
		}
	}
	for _, name := range want {
		if _, ok := first[name]; !ok {
			t.Errorf("list strategies lacks %s", name)
		}
	}
	if len(first) != len(want) {
		t.Errorf("list strategies prints %d names, the registry has %d:\n%s", len(first), len(want), out)
	}
	if _, _, err := runCLI(t, context.Background(), "list", "experiments"); err != nil {
		t.Errorf("list experiments: %v", err)
	}
	for _, args := range [][]string{{"list", "strategy"}, {"list", "strategies", "experiments"}} {
		_, _, err := runCLI(t, context.Background(), args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "experiments, strategies") {
			t.Errorf("%q: exit %d, %v; want 2 naming the topics", args, exitCode(err), err)
		}
	}
}

// TestStrategyWordsParse: every name completion offers for --strategies
// is one an experiment accepts.
func TestStrategyWordsParse(t *testing.T) {
	for _, w := range strategyWords() {
		var err error
		switch {
		case strategies.IsGRPC(w):
			_, err = strategies.ParseGRPC(w)
		case proxyspec.IsProxy(w):
			_, err = proxyspec.Parse(w)
		default:
			_, err = strategies.Parse(w)
		}
		if err != nil {
			t.Errorf("completion offers %s, which does not parse: %v", w, err)
		}
	}
}

package strategies

import (
	"slices"
	"testing"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Every strategy, wrapper and proxy kind a spec can name has a line in
// the glossary, so none can be added without one.
func TestDescribeCoversTheCatalogue(t *testing.T) {
	names := append(append(Names(), WrapperNames()...), proxyspec.Kinds()...)
	names = append(names, "grpc")
	for _, n := range names {
		if Describe(n) == "" {
			t.Errorf("Describe(%q) is empty: add a line to descriptions in describe.go", n)
		}
	}
	for n := range descriptions {
		if !slices.Contains(names, n) {
			t.Errorf("descriptions has %q, which is no strategy, wrapper or proxy kind", n)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"base", "p2c", []string{"p2c"}},
		{"wrappers in order", "least-inflight+eject(consecutive=5,duration=5s)+slowstart", []string{"least-inflight", "eject", "slowstart"}},
		{"nginx", "nginx:least_conn(next_upstream=error|timeout|http_503)", []string{"nginx"}},
		{"haproxy with options", "haproxy:random(2)+observe(error_limit=10,on_error=mark-down)", []string{"haproxy"}},
		{"caddy", "caddy:least_conn", []string{"caddy"}},
		{"grpc", "grpc:round_robin", []string{"grpc"}},
		{"lbchaos proxy", "lbchaos:p2c+eject", []string{"lbchaos", "p2c", "eject"}},
		{"unknown", "no-such-strategy", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Terms(tc.spec); !slices.Equal(got, tc.want) {
				t.Errorf("Terms(%q) = %q, want %q", tc.spec, got, tc.want)
			}
		})
	}
}

package experiments

import (
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Kinds of the names in StrategyCatalog.
const (
	KindBuiltin = "built-in" // a base strategy of package strategies
	KindWrapper = "wrapper"  // written after a base: least-inflight+eject
	KindProxy   = "proxy"    // a real proxy in front of the instances
	KindGRPC    = "grpc"     // grpc-go's own balancer
)

// StrategyInfo is one entry of StrategyCatalog.
type StrategyInfo struct {
	// Name is as an experiment writes it ("p2c", "nginx:least_conn",
	// "grpc:round_robin"); a wrapper's starts with "+" ("+eject").
	Name string
	// Kind is KindBuiltin, KindWrapper, KindProxy or KindGRPC.
	Kind string
	// About says what it does in one line (strategies.Describe).
	About string
	// Pattern marks a name with a part to fill in, such as
	// "lbchaos:STRATEGY" or "nginx:file(path=FILE)": a form, not a name
	// to write as it stands.
	Pattern bool
}

// StrategyCatalog returns every strategy name the experiments may use,
// from the registry of package strategies and the proxy spec grammar:
// the built-in strategies, the wrappers, each proxy's algorithms (and
// lbchaos:STRATEGY) and the gRPC balancers, in that order, each group
// sorted.
func StrategyCatalog() []StrategyInfo {
	var out []StrategyInfo
	for _, name := range strategies.Names() {
		out = append(out, StrategyInfo{Name: name, Kind: KindBuiltin, About: strategies.Describe(name)})
	}
	for _, name := range strategies.WrapperNames() {
		out = append(out, StrategyInfo{Name: "+" + name, Kind: KindWrapper, About: strategies.Describe(name)})
	}
	for _, kind := range proxyspec.Kinds() {
		about := strategies.Describe(kind)
		if kind == proxyspec.Lbchaos {
			out = append(out, StrategyInfo{Name: kind + ":STRATEGY", Kind: KindProxy, About: about + ", e.g. lbchaos:p2c+eject", Pattern: true})
			continue
		}
		file := false
		for _, alg := range proxyspec.Algorithms(kind) {
			if alg == proxyspec.File {
				file = true
				continue
			}
			out = append(out, StrategyInfo{Name: kind + ":" + alg, Kind: KindProxy, About: about})
		}
		if file {
			out = append(out, StrategyInfo{Name: kind + ":" + proxyspec.File + "(path=FILE)", Kind: KindProxy, About: about + ", in your own file", Pattern: true})
		}
	}
	for _, policy := range strategies.GRPCPolicies() {
		out = append(out, StrategyInfo{Name: strategies.GRPCPrefix + policy, Kind: KindGRPC, About: strategies.Describe("grpc")})
	}
	return out
}

package strategies

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// A gRPC strategy is one of grpc-go's own load-balancing policies, run
// unchanged inside a grpc.ClientConn per balancer replica, named
// "grpc:policy" with optional parameters:
//
//	grpc:pick_first(shuffle_address_list=true)
//	grpc:round_robin
//	grpc:weighted_round_robin(blackout_period=1s,error_utilization_penalty=0)
//	grpc:least_request_experimental(choice_count=3)
//	grpc:ring_hash_experimental(min_ring_size=1024,max_ring_size=4096)
//
// The policy names are the ones grpc-go registers (v1.85); the parameters
// are their service-config fields in snake case. grpc-go's own retry
// policy and retry throttling may follow the policy, as +retry(...) and
// +throttling(...) (grpc_retry.go); no other wrapper. GRPCSpec is the
// parsed form; LBConfig writes the policy's load-balancing config and
// ServiceConfig the channel's whole service config.
type GRPCSpec struct {
	Policy string            // grpc-go's registered name, e.g. "round_robin"
	Params map[string]string // nil when none were given
	// Retry is the +retry segment, nil when there is none: then every
	// call is one attempt.
	Retry *GRPCRetry
	// Throttling is the +throttling segment, nil when there is none; only
	// with Retry.
	Throttling *GRPCThrottling
}

// GRPCPrefix starts every gRPC strategy spec.
const GRPCPrefix = "grpc:"

// gRPC policies, by the names grpc-go registers them under.
const (
	GRPCPickFirst     = "pick_first"
	GRPCRoundRobin    = "round_robin"
	GRPCWeightedRR    = "weighted_round_robin"
	GRPCLeastRequest  = "least_request_experimental"
	GRPCRingHash      = "ring_hash_experimental"
	grpcRingSizeLimit = 8 * 1024 * 1024 // grpc-go's ringHashSizeUpperBound
)

// grpcParam is one parameter of a gRPC policy: its service-config field
// and how its value is checked and encoded.
type grpcParam struct {
	field string
	kind  byte // 'b' bool, 'd' positive duration, 'f' float >= 0, 'u' unsigned
	min   uint64
	max   uint64
}

// grpcPolicies are the policies and their parameters. weighted_round_robin
// always reads per-call ORCA reports (enableOobLoadReport false), so its
// out-of-band settings are not offered.
var grpcPolicies = map[string]map[string]grpcParam{
	GRPCPickFirst:  {"shuffle_address_list": {field: "shuffleAddressList", kind: 'b'}},
	GRPCRoundRobin: {},
	GRPCWeightedRR: {
		"blackout_period":           {field: "blackoutPeriod", kind: 'd'},
		"weight_expiration_period":  {field: "weightExpirationPeriod", kind: 'd'},
		"weight_update_period":      {field: "weightUpdatePeriod", kind: 'd'},
		"error_utilization_penalty": {field: "errorUtilizationPenalty", kind: 'f'},
	},
	// grpc-go rejects choice_count < 2 and caps it at 10 (gRFC A48).
	GRPCLeastRequest: {"choice_count": {field: "choiceCount", kind: 'u', min: 2, max: 10}},
	GRPCRingHash: {
		"min_ring_size": {field: "minRingSize", kind: 'u', min: 1, max: grpcRingSizeLimit},
		"max_ring_size": {field: "maxRingSize", kind: 'u', min: 1, max: grpcRingSizeLimit},
	},
}

// GRPCPolicies returns the policy names a gRPC strategy can take, sorted.
func GRPCPolicies() []string { return sortedKeys(grpcPolicies) }

// IsGRPC reports whether spec names a gRPC strategy ("grpc:...").
func IsGRPC(spec string) bool { return strings.HasPrefix(strings.TrimSpace(spec), GRPCPrefix) }

// ParseGRPC parses and validates a gRPC strategy spec. The error names the
// spec and the policy or parameter at fault, and why.
func ParseGRPC(spec string) (GRPCSpec, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(spec), GRPCPrefix)
	if !ok {
		return GRPCSpec{}, fmt.Errorf("malformed gRPC spec %q: want grpc:POLICY (one of %s)", spec, strings.Join(GRPCPolicies(), ", "))
	}
	segs, err := proxyspec.Split(rest)
	if err != nil {
		return GRPCSpec{}, fmt.Errorf("%s: %w", spec, err)
	}
	policy := segs[0]
	params, known := grpcPolicies[policy.Name]
	if !known {
		return GRPCSpec{}, fmt.Errorf("%s: unknown grpc-go policy %q (known: %s)", spec, policy.Name, strings.Join(GRPCPolicies(), ", "))
	}
	out := GRPCSpec{Policy: policy.Name, Params: policy.Params}
	if err := parseGRPCWrappers(&out, segs[1:]); err != nil {
		return GRPCSpec{}, fmt.Errorf("%s: %w", spec, err)
	}
	if err := policy.CheckKeys(sortedKeys(params)); err != nil {
		return GRPCSpec{}, fmt.Errorf("%s: %w", spec, err)
	}
	for _, k := range sortedKeys(policy.Params) {
		if _, err := params[k].value(policy.Params[k]); err != nil {
			return GRPCSpec{}, fmt.Errorf("%s: %s: %w", spec, k, err)
		}
	}
	if policy.Name == GRPCRingHash {
		lo, hi := grpcUint(policy.Params, "min_ring_size", 1024), grpcUint(policy.Params, "max_ring_size", 4096)
		if lo > hi {
			return GRPCSpec{}, fmt.Errorf("%s: min_ring_size (%d) is greater than max_ring_size (%d)", spec, lo, hi)
		}
	}
	return out, nil
}

// value checks v and returns its JSON value.
func (p grpcParam) value(v string) (any, error) {
	switch p.kind {
	case 'b':
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", v)
		}
		return b, nil
	case 'd':
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("want a positive duration like 10s, got %q", v)
		}
		// A protobuf JSON duration: seconds with up to 9 decimals.
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s", nil
	case 'f':
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("want a number >= 0, got %q", v)
		}
		return f, nil
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < p.min || n > p.max {
			return nil, fmt.Errorf("want an integer within [%d, %d], got %q", p.min, p.max, v)
		}
		return n, nil
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func grpcUint(params map[string]string, key string, def uint64) uint64 {
	if n, err := strconv.ParseUint(params[key], 10, 64); err == nil {
		return n
	}
	return def
}

// String returns the spec in canonical form: parameters sorted by key,
// +retry and +throttling after the policy in that order with every
// parameter given.
func (s GRPCSpec) String() string {
	var b strings.Builder
	b.WriteString(GRPCPrefix)
	b.WriteString(proxyspec.Segment{Name: s.Policy, Params: s.Params}.String())
	if s.Retry != nil {
		b.WriteString("+" + s.Retry.segment().String())
	}
	if s.Throttling != nil {
		b.WriteString("+" + s.Throttling.segment().String())
	}
	return b.String()
}

// ServiceConfig returns the service config JSON of a channel running s:
// its loadBalancingConfig, the policy's LBConfig(hashHeader) under the
// name lbName (a parent policy's that runs it; "" is s.Policy); with
// +retry a methodConfig giving every method ("name": [{}]) its
// retryPolicy; with +throttling the retryThrottling. A channel with
// +retry must not be dialled with grpc.WithDisableRetry.
func (s GRPCSpec) ServiceConfig(lbName, hashHeader string) json.RawMessage {
	if lbName == "" {
		lbName = s.Policy
	}
	cfg := map[string]any{
		"loadBalancingConfig": []map[string]json.RawMessage{{lbName: s.LBConfig(hashHeader)}},
	}
	if s.Retry != nil {
		cfg["methodConfig"] = []map[string]any{{
			"name":        []map[string]string{{}},
			"retryPolicy": s.Retry.policyJSON(),
		}}
	}
	if s.Throttling != nil {
		cfg["retryThrottling"] = map[string]any{"maxTokens": s.Throttling.MaxTokens, "tokenRatio": s.Throttling.TokenRatio}
	}
	js, _ := json.Marshal(cfg) // strings, numbers and raw JSON of LBConfig's
	return js
}

// LBConfig returns the policy's load-balancing config as grpc-go's
// ParseConfig of that policy takes it: the given parameters only (grpc-go
// fills in its defaults), and for ring_hash_experimental hashHeader as its
// requestHashHeader, the request metadata key whose value it hashes.
func (s GRPCSpec) LBConfig(hashHeader string) json.RawMessage {
	cfg := map[string]any{}
	params := grpcPolicies[s.Policy]
	for k, v := range s.Params {
		if jv, err := params[k].value(v); err == nil { // ParseGRPC checked it
			cfg[params[k].field] = jv
		}
	}
	if s.Policy == GRPCRingHash && hashHeader != "" {
		cfg["requestHashHeader"] = hashHeader
	}
	js, _ := json.Marshal(cfg) // maps of strings, numbers and bools
	return js
}

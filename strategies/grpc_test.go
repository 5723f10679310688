package strategies

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGRPC(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want GRPCSpec
		err  string
	}{
		{name: "pick_first", spec: "grpc:pick_first", want: GRPCSpec{Policy: GRPCPickFirst}},
		{name: "shuffle", spec: " grpc:pick_first(shuffle_address_list=true) ", want: GRPCSpec{Policy: GRPCPickFirst, Params: map[string]string{"shuffle_address_list": "true"}}},
		{name: "round_robin", spec: "grpc:round_robin", want: GRPCSpec{Policy: GRPCRoundRobin}},
		{name: "wrr", spec: "grpc:weighted_round_robin(blackout_period=1s, error_utilization_penalty=0)", want: GRPCSpec{Policy: GRPCWeightedRR,
			Params: map[string]string{"blackout_period": "1s", "error_utilization_penalty": "0"}}},
		{name: "least_request", spec: "grpc:least_request_experimental(choice_count=3)", want: GRPCSpec{Policy: GRPCLeastRequest, Params: map[string]string{"choice_count": "3"}}},
		{name: "ring_hash", spec: "grpc:ring_hash_experimental(min_ring_size=16,max_ring_size=64)", want: GRPCSpec{Policy: GRPCRingHash,
			Params: map[string]string{"min_ring_size": "16", "max_ring_size": "64"}}},
		{name: "not grpc", spec: "p2c", err: `malformed gRPC spec "p2c"`},
		{name: "unknown policy", spec: "grpc:ring_hash", err: `grpc:ring_hash: unknown grpc-go policy "ring_hash" (known: least_request_experimental, pick_first, ring_hash_experimental, round_robin, weighted_round_robin)`},
		{name: "unknown parameter", spec: "grpc:round_robin(x=1)", err: `grpc:round_robin(x=1): round_robin: unknown parameter "x" (round_robin takes no parameters)`},
		{name: "wrapper", spec: "grpc:round_robin+eject", err: `takes no wrappers ("+eject")`},
		{name: "bad bool", spec: "grpc:pick_first(shuffle_address_list=yes)", err: `shuffle_address_list: want true or false, got "yes"`},
		{name: "bad duration", spec: "grpc:weighted_round_robin(blackout_period=0s)", err: `blackout_period: want a positive duration like 10s, got "0s"`},
		{name: "negative penalty", spec: "grpc:weighted_round_robin(error_utilization_penalty=-1)", err: `error_utilization_penalty: want a number >= 0, got "-1"`},
		{name: "choice_count 1", spec: "grpc:least_request_experimental(choice_count=1)", err: `choice_count: want an integer within [2, 10], got "1"`},
		{name: "ring too big", spec: "grpc:ring_hash_experimental(max_ring_size=9000000)", err: `max_ring_size: want an integer within [1, 8388608]`},
		{name: "min above max", spec: "grpc:ring_hash_experimental(min_ring_size=8192)", err: `min_ring_size (8192) is greater than max_ring_size (4096)`},
		{name: "malformed", spec: "grpc:round_robin(", err: `grpc:round_robin(: malformed spec`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !IsGRPC(tc.spec) && tc.err == "" {
				t.Errorf("IsGRPC(%q) = false", tc.spec)
			}
			got, err := ParseGRPC(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseGRPC(%q) error = %v, want it to contain %q", tc.spec, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGRPC(%q): %v", tc.spec, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseGRPC(%q) mismatch (-want +got):\n%s", tc.spec, diff)
			}
			again, err := ParseGRPC(got.String())
			if err != nil || !cmp.Equal(again, got) {
				t.Errorf("ParseGRPC(%q) = %v, %v; want the same spec back", got.String(), again, err)
			}
		})
	}
}

func TestGRPCLBConfig(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want map[string]any
	}{
		{name: "defaults left to grpc-go", spec: "grpc:round_robin", want: map[string]any{}},
		{name: "shuffle", spec: "grpc:pick_first(shuffle_address_list=true)", want: map[string]any{"shuffleAddressList": true}},
		{name: "wrr", spec: "grpc:weighted_round_robin(blackout_period=1500ms,weight_expiration_period=1m,weight_update_period=100ms,error_utilization_penalty=0)",
			want: map[string]any{"blackoutPeriod": "1.5s", "weightExpirationPeriod": "60s", "weightUpdatePeriod": "0.1s", "errorUtilizationPenalty": 0.0}},
		{name: "least_request", spec: "grpc:least_request_experimental(choice_count=4)", want: map[string]any{"choiceCount": 4.0}},
		{name: "ring_hash hashes the key header", spec: "grpc:ring_hash_experimental(min_ring_size=16,max_ring_size=64)",
			want: map[string]any{"minRingSize": 16.0, "maxRingSize": 64.0, "requestHashHeader": "x-key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseGRPC(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(s.LBConfig("x-key"), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LBConfig mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

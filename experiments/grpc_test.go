package experiments

import (
	"strings"
	"testing"
)

func TestGRPCStrategies(t *testing.T) {
	tests := []struct {
		name       string
		strategies string
		add        string
		want       string // substring of the error; "" = accepted
	}{
		{name: "grpc load", strategies: "[grpc:round_robin, p2c]", add: "protocol: grpc\n"},
		{name: "settings", strategies: `["grpc:weighted_round_robin(error_utilization_penalty=0)"]`, add: "protocol: grpc\n"},
		{name: "http1 load", strategies: "[p2c, grpc:round_robin]",
			want: "t.yaml: line 6: strategies[1]: grpc:round_robin is a grpc-go balancer and needs protocol: grpc (the experiment's protocol is http1)"},
		{name: "h2c load", strategies: "[grpc:pick_first]", add: "protocol: h2c\n", want: "needs protocol: grpc (the experiment's protocol is h2c)"},
		{name: "unknown policy", strategies: "[grpc:ring_hash]", add: "protocol: grpc\n", want: `t.yaml: line 6: strategies[0]: grpc:ring_hash: unknown grpc-go policy "ring_hash"`},
		{name: "bad setting", strategies: `["grpc:least_request_experimental(choice_count=1)"]`, add: "protocol: grpc\n", want: "t.yaml: line 6: strategies[0]: grpc:least_request_experimental(choice_count=1): choice_count: want an integer within [2, 10]"},
		{name: "generators", strategies: "[grpc:round_robin]", add: "protocol: grpc\ngenerators: 2\n", want: "t.yaml: strategies[0]: grpc:round_robin: a grpc-go balancer runs in one process"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(good, "[round-robin]", tc.strategies, 1) + tc.add
			e, err := Parse("t.yaml", []byte(body))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if e.Protocol != ProtocolGRPC {
					t.Errorf("protocol = %q, want grpc", e.Protocol)
				}
				return
			}
			if err == nil || !strings.Contains(msg(err, tc.want), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

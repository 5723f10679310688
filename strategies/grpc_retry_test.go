package strategies

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestParseGRPCRetry(t *testing.T) {
	def := func(mod func(r *GRPCRetry)) *GRPCRetry {
		r := &GRPCRetry{MaxAttempts: 3, InitialBackoff: 25 * time.Millisecond, MaxBackoff: 250 * time.Millisecond,
			BackoffMultiplier: 2, Codes: []string{"UNAVAILABLE"}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	tests := []struct {
		name string
		spec string
		want GRPCSpec
		err  string
	}{
		{name: "defaults", spec: "grpc:round_robin+retry", want: GRPCSpec{Policy: GRPCRoundRobin, Retry: def(nil)}},
		{name: "every parameter",
			spec: "grpc:round_robin+retry(max_attempts=5, initial_backoff=10ms, max_backoff=1s, backoff_multiplier=1.5, codes=UNAVAILABLE|RESOURCE_EXHAUSTED)",
			want: GRPCSpec{Policy: GRPCRoundRobin, Retry: def(func(r *GRPCRetry) {
				r.MaxAttempts, r.InitialBackoff, r.MaxBackoff, r.BackoffMultiplier = 5, 10*time.Millisecond, time.Second, 1.5
				r.Codes = []string{"RESOURCE_EXHAUSTED", "UNAVAILABLE"} // code order
			})}},
		{name: "with policy settings and throttling",
			spec: "grpc:pick_first(shuffle_address_list=true)+retry(max_attempts=2)+throttling(max_tokens=100,token_ratio=0.5)",
			want: GRPCSpec{Policy: GRPCPickFirst, Params: map[string]string{"shuffle_address_list": "true"},
				Retry: def(func(r *GRPCRetry) { r.MaxAttempts = 2 }), Throttling: &GRPCThrottling{MaxTokens: 100, TokenRatio: 0.5}}},
		{name: "throttling defaults, either order", spec: "grpc:round_robin+throttling+retry",
			want: GRPCSpec{Policy: GRPCRoundRobin, Retry: def(nil), Throttling: &GRPCThrottling{MaxTokens: 10, TokenRatio: 0.1}}},
		{name: "max_tokens bounds", spec: "grpc:round_robin+retry+throttling(max_tokens=1000,token_ratio=0.001)",
			want: GRPCSpec{Policy: GRPCRoundRobin, Retry: def(nil), Throttling: &GRPCThrottling{MaxTokens: 1000, TokenRatio: 0.001}}},

		{name: "one attempt", spec: "grpc:round_robin+retry(max_attempts=1)",
			err: `grpc:round_robin+retry(max_attempts=1): retry: max_attempts: want an integer >= 2 (attempts in all, the first included), got "1"`},
		{name: "attempts above grpc-go's cap", spec: "grpc:round_robin+retry(max_attempts=6)",
			err: `retry: max_attempts: 6: grpc-go makes at most 5 attempts per call and would clamp it; want 2..5`},
		{name: "attempts not a number", spec: "grpc:round_robin+retry(max_attempts=three)", err: `max_attempts: want an integer >= 2`},
		{name: "zero backoff", spec: "grpc:round_robin+retry(initial_backoff=0s)", err: `retry: initial_backoff: want a positive duration like 25ms, got "0s"`},
		{name: "negative max backoff", spec: "grpc:round_robin+retry(max_backoff=-1s)", err: `retry: max_backoff: want a positive duration like 25ms, got "-1s"`},
		{name: "backoff without unit", spec: "grpc:round_robin+retry(max_backoff=100)", err: `retry: max_backoff: want a positive duration`},
		{name: "zero multiplier", spec: "grpc:round_robin+retry(backoff_multiplier=0)", err: `retry: backoff_multiplier: want a number > 0, got "0"`},
		{name: "infinite multiplier", spec: "grpc:round_robin+retry(backoff_multiplier=Inf)", err: `retry: backoff_multiplier: want a number > 0, got "Inf"`},
		{name: "NaN multiplier", spec: "grpc:round_robin+retry(backoff_multiplier=NaN)", err: `backoff_multiplier: want a number > 0`},
		{name: "unknown code", spec: "grpc:round_robin+retry(codes=UNAVAILABLE|unavailable)", err: `retry: codes: unknown gRPC status code "unavailable"`},
		{name: "OK is no failure", spec: "grpc:round_robin+retry(codes=OK)", err: `retry: codes: unknown gRPC status code "OK"`},
		{name: "empty code", spec: "grpc:round_robin+retry(codes=UNAVAILABLE||ABORTED)", err: `retry: codes: empty status code name in "UNAVAILABLE||ABORTED"`},
		{name: "code twice", spec: "grpc:round_robin+retry(codes=ABORTED|ABORTED)", err: `retry: codes: ABORTED listed twice`},
		{name: "unknown retry key", spec: "grpc:round_robin+retry(attempts=3)",
			err: `retry: unknown parameter "attempts" (allowed: backoff_multiplier, codes, initial_backoff, max_attempts, max_backoff)`},
		{name: "retry twice", spec: "grpc:round_robin+retry+retry", err: `grpc:round_robin+retry+retry: +retry given twice`},
		{name: "no tokens", spec: "grpc:round_robin+retry+throttling(max_tokens=0)", err: `throttling: max_tokens: want an integer within [1, 1000] (gRFC A6: (0, 1000]), got "0"`},
		{name: "too many tokens", spec: "grpc:round_robin+retry+throttling(max_tokens=1001)", err: `throttling: max_tokens: want an integer within [1, 1000]`},
		{name: "fractional tokens", spec: "grpc:round_robin+retry+throttling(max_tokens=2.5)", err: `throttling: max_tokens: want an integer`},
		{name: "zero ratio", spec: "grpc:round_robin+retry+throttling(token_ratio=0)", err: `throttling: token_ratio: want a number > 0, got "0"`},
		{name: "throttling alone", spec: "grpc:round_robin+throttling", err: `grpc:round_robin+throttling: +throttling throttles grpc-go's retries, and there are none: add +retry`},
		{name: "throttling twice", spec: "grpc:round_robin+retry+throttling+throttling", err: `+throttling given twice`},
		{name: "hedge", spec: "grpc:round_robin+hedge",
			err: `grpc:round_robin+hedge: +hedge: grpc-go implements no hedging: it ignores a service config's hedgingPolicy (grpc/grpc-go#2823)`},
		{name: "hedge with parameters", spec: "grpc:round_robin+retry+hedge(delay=10ms)", err: `grpc-go implements no hedging`},
		{name: "other wrapper", spec: "grpc:round_robin+retry+eject", err: `grpc:round_robin+retry+eject: a grpc-go policy takes no wrappers ("+eject")`},
		{name: "policy checked too", spec: "grpc:round_robin(x=1)+retry", err: `round_robin: unknown parameter "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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

func TestGRPCSpecStringCanonical(t *testing.T) {
	for spec, want := range map[string]string{
		"grpc:round_robin": "grpc:round_robin",
		"grpc:round_robin+throttling(token_ratio=0.25)+retry(codes=UNAVAILABLE|ABORTED,initial_backoff=1500us)": "grpc:round_robin" +
			"+retry(backoff_multiplier=2,codes=ABORTED|UNAVAILABLE,initial_backoff=1.5ms,max_attempts=3,max_backoff=250ms)" +
			"+throttling(max_tokens=10,token_ratio=0.25)",
		"grpc:round_robin+retry(backoff_multiplier=1e21)": "grpc:round_robin" +
			"+retry(backoff_multiplier=1000000000000000000000,codes=UNAVAILABLE,initial_backoff=25ms,max_attempts=3,max_backoff=250ms)",
	} {
		s, err := ParseGRPC(spec)
		if err != nil {
			t.Fatalf("ParseGRPC(%q): %v", spec, err)
		}
		if got := s.String(); got != want {
			t.Errorf("ParseGRPC(%q).String() = %q, want %q", spec, got, want)
		}
	}
}

func TestGRPCServiceConfig(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		lbName string
		want   string
	}{
		{name: "policy alone", spec: "grpc:round_robin",
			want: `{"loadBalancingConfig":[{"round_robin":{}}]}`},
		{name: "parent policy's name, policy settings", spec: "grpc:ring_hash_experimental(min_ring_size=16)", lbName: "parent_ring_hash_experimental",
			want: `{"loadBalancingConfig":[{"parent_ring_hash_experimental":{"minRingSize":16,"requestHashHeader":"x-key"}}]}`},
		{name: "retry defaults", spec: "grpc:round_robin+retry",
			want: `{"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{}],"retryPolicy":{
				"maxAttempts":3,"initialBackoff":"0.025s","maxBackoff":"0.25s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`},
		{name: "retry and throttling", spec: "grpc:pick_first+retry(max_attempts=4,initial_backoff=1ns,max_backoff=90s,backoff_multiplier=1.25,codes=RESOURCE_EXHAUSTED|UNAVAILABLE)+throttling(max_tokens=5,token_ratio=0.125)",
			want: `{"loadBalancingConfig":[{"pick_first":{}}],"methodConfig":[{"name":[{}],"retryPolicy":{
				"maxAttempts":4,"initialBackoff":"0.000000001s","maxBackoff":"90s","backoffMultiplier":1.25,
				"retryableStatusCodes":["RESOURCE_EXHAUSTED","UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":5,"tokenRatio":0.125}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseGRPC(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			js := s.ServiceConfig(tc.lbName, "x-key")
			var got, want any
			if err := json.Unmarshal(js, &got); err != nil {
				t.Fatalf("ServiceConfig: %v: %s", err, js)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ServiceConfig mismatch (-want +got):\n%s", diff)
			}
			if tc.lbName != "" {
				return // a parent policy grpc-go does not know
			}
			// grpc-go parses a default service config when the channel is
			// made, and refuses an invalid one (an invalid retry policy or
			// throttling among them).
			cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultServiceConfig(string(js)))
			if err != nil {
				t.Fatalf("grpc-go refuses the service config %s: %v", js, err)
			}
			_ = cc.Close()
		})
	}
}

func TestDurationJSON(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Nanosecond:         "0.000000001s",
		25 * time.Millisecond:   "0.025s",
		time.Second:             "1s",
		90*time.Second + 5*1e6:  "90.005s",
		1500 * time.Microsecond: "0.0015s",
	} {
		if got := durationJSON(d); got != want {
			t.Errorf("durationJSON(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseGRPCRetry: a gRPC spec with +retry and +throttling is refused
// with an error naming it, or its canonical form parses to the same spec
// (checkGRPCSpec).
func FuzzParseGRPCRetry(f *testing.F) {
	for _, s := range []string{
		"grpc:round_robin+retry",
		"grpc:round_robin+retry(max_attempts=5,initial_backoff=10ms,max_backoff=1s,backoff_multiplier=1.5,codes=UNAVAILABLE|RESOURCE_EXHAUSTED)",
		"grpc:pick_first+retry(codes=ABORTED)+throttling(max_tokens=100,token_ratio=0.5)",
		"grpc:round_robin+throttling+retry(backoff_multiplier=0.001)",
		"grpc:round_robin+hedge",
		"grpc:round_robin+retry(max_attempts=9)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if IsGRPC(spec) {
			checkGRPCSpec(t, spec)
		}
	})
}

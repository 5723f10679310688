package strategies

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// grpc-go's own retries (gRFC A6, "Transparent Retries" aside), set on a
// gRPC strategy by two segments after its policy:
//
//	grpc:round_robin+retry(max_attempts=3,initial_backoff=25ms,max_backoff=250ms,backoff_multiplier=2,codes=UNAVAILABLE|RESOURCE_EXHAUSTED)
//	grpc:round_robin+retry+throttling(max_tokens=10,token_ratio=0.1)
//
// +retry is the service config's retryPolicy, applied to every method;
// +throttling its retryThrottling. They are validated as grpc-go validates
// them, so that a spec is refused here rather than by grpc.NewClient.
//
// What grpc-go (v1.85) does with them:
//
//   - A call fails with a status whose code is in codes, answered
//     Trailers-Only (the status in the one HEADERS frame that ends the
//     stream; grpc-go retries no call once response headers came, nor one
//     whose replay buffer of 256 KiB overflowed): grpc-go waits, then
//     makes another attempt, up to max_attempts attempts in all, the first
//     included. The call's deadline spans every attempt and wait.
//   - Each attempt is a new pick through the balancer, exactly as a new
//     call's: nothing excludes the instance that just failed (unlike
//     Envoy's previous_hosts retry predicate), so with round_robin the
//     retry goes to whichever instance is next and with pick_first to the
//     same one.
//   - The wait before retry n (n = 1, 2, ...) is
//     min(initial_backoff × backoff_multiplier^(n-1), max_backoff)
//     × U(0.8, 1.2), a uniform jitter (grpc-go's clientStream.shouldRetry;
//     the 2017 text of A6 said U(0, that cap)). A server's
//     grpc-retry-pushback-ms replaces it; lbchaos's instances send none.
//   - With +throttling, the channel holds max_tokens tokens, starting
//     full: each attempt that fails as above (a retryable code,
//     Trailers-Only) takes one (down to 0), each OK call gives back
//     token_ratio (up to max_tokens), and a retry is made only while,
//     after the failure's token is taken, more than max_tokens / 2
//     remain. One throttle per grpc.ClientConn (per balancer replica),
//     for every instance behind it.
//
// grpc-go implements no hedging: it ignores a service config's
// hedgingPolicy (grpc/grpc-go#2823), so +hedge is refused on a gRPC
// strategy.

// Defaults of +retry and +throttling, for the keys a spec leaves out.
const (
	// GRPCRetryMaxAttempts is the attempts of a call, the first included.
	GRPCRetryMaxAttempts = 3
	// GRPCRetryInitialBackoff is the first retry's backoff before jitter,
	// Envoy's base interval.
	GRPCRetryInitialBackoff = 25 * time.Millisecond
	// GRPCRetryMaxBackoff caps the backoff before jitter: 10 × initial, as
	// Envoy's default.
	GRPCRetryMaxBackoff = 250 * time.Millisecond
	// GRPCRetryBackoffMultiplier grows the backoff from one retry to the
	// next.
	GRPCRetryBackoffMultiplier = 2.0
	// GRPCThrottlingMaxTokens and GRPCThrottlingTokenRatio are gRFC A6's
	// example: retries stop once the failed attempts outnumber a tenth of
	// the OK calls by 5.
	GRPCThrottlingMaxTokens  = 10
	GRPCThrottlingTokenRatio = 0.1
	// grpcMaxAttemptsCap is grpc-go's limit of attempts per call (its
	// default WithMaxCallAttempts): it clamps a larger maxAttempts to it
	// without a word, so a spec asking more is refused instead.
	grpcMaxAttemptsCap = 5
)

// grpcRetryCode is +retry's default retryable status code.
const grpcRetryCode = "UNAVAILABLE"

// GRPCRetry is a +retry segment: grpc-go's retryPolicy for every method.
type GRPCRetry struct {
	// MaxAttempts is the most attempts of a call, the first included:
	// 2..5 (max_attempts; default GRPCRetryMaxAttempts).
	MaxAttempts int
	// InitialBackoff and MaxBackoff (> 0; initial_backoff, max_backoff)
	// and BackoffMultiplier (> 0; backoff_multiplier) set the backoff, see
	// above.
	InitialBackoff    time.Duration
	MaxBackoff        time.Duration
	BackoffMultiplier float64
	// Codes are the retryable status codes by their spec names, in code
	// order (codes, "|"-separated; default UNAVAILABLE).
	Codes []string
}

// GRPCThrottling is a +throttling segment: grpc-go's retryThrottling.
type GRPCThrottling struct {
	// MaxTokens is the tokens of a full bucket, 1..1000 (max_tokens;
	// default GRPCThrottlingMaxTokens).
	MaxTokens int
	// TokenRatio is the tokens an OK call gives back, > 0 (token_ratio;
	// default GRPCThrottlingTokenRatio).
	TokenRatio float64
}

// The segments' names and keys.
const (
	grpcRetrySegment      = "retry"
	grpcThrottlingSegment = "throttling"
)

var (
	grpcRetryKeys      = []string{"backoff_multiplier", "codes", "initial_backoff", "max_attempts", "max_backoff"}
	grpcThrottlingKeys = []string{"max_tokens", "token_ratio"}
)

// parseGRPCWrappers reads the segments after a gRPC strategy's policy
// into s. Errors name the segment and parameter; the caller adds the spec.
func parseGRPCWrappers(s *GRPCSpec, segs []proxyspec.Segment) error {
	for _, seg := range segs {
		switch seg.Name {
		case grpcRetrySegment:
			if s.Retry != nil {
				return fmt.Errorf("+%s given twice", seg.Name)
			}
			r, err := parseGRPCRetry(seg)
			if err != nil {
				return err
			}
			s.Retry = r
		case grpcThrottlingSegment:
			if s.Throttling != nil {
				return fmt.Errorf("+%s given twice", seg.Name)
			}
			th, err := parseGRPCThrottling(seg)
			if err != nil {
				return err
			}
			s.Throttling = th
		case "hedge", "hedging":
			return fmt.Errorf("+%s: grpc-go implements no hedging: it ignores a service config's hedgingPolicy (grpc/grpc-go#2823); "+
				"use +retry, or a built-in strategy with +hedge", seg.Name)
		default:
			return fmt.Errorf("a grpc-go policy takes no wrappers (%q); its settings go in parentheses, "+
				"and grpc-go's own retries in +retry(...) and +throttling(...)", "+"+seg.Name)
		}
	}
	if s.Throttling != nil && s.Retry == nil {
		return fmt.Errorf("+%s throttles grpc-go's retries, and there are none: add +retry", grpcThrottlingSegment)
	}
	return nil
}

func parseGRPCRetry(seg proxyspec.Segment) (*GRPCRetry, error) {
	if err := seg.CheckKeys(grpcRetryKeys); err != nil {
		return nil, err
	}
	r := &GRPCRetry{
		MaxAttempts:       GRPCRetryMaxAttempts,
		InitialBackoff:    GRPCRetryInitialBackoff,
		MaxBackoff:        GRPCRetryMaxBackoff,
		BackoffMultiplier: GRPCRetryBackoffMultiplier,
		Codes:             []string{grpcRetryCode},
	}
	p := seg.Params
	var err error
	bad := func(key string, err error) error { return fmt.Errorf("%s: %s: %w", seg.Name, key, err) }
	if v, ok := p["max_attempts"]; ok {
		n, perr := strconv.Atoi(v)
		switch {
		case perr != nil || n < 2:
			return nil, bad("max_attempts", fmt.Errorf("want an integer >= 2 (attempts in all, the first included), got %q", v))
		case n > grpcMaxAttemptsCap:
			return nil, bad("max_attempts", fmt.Errorf("%d: grpc-go makes at most %d attempts per call and would clamp it; want 2..%d", n, grpcMaxAttemptsCap, grpcMaxAttemptsCap))
		}
		r.MaxAttempts = n
	}
	if r.InitialBackoff, err = positiveDuration(p, "initial_backoff", r.InitialBackoff); err != nil {
		return nil, bad("initial_backoff", err)
	}
	if r.MaxBackoff, err = positiveDuration(p, "max_backoff", r.MaxBackoff); err != nil {
		return nil, bad("max_backoff", err)
	}
	if r.BackoffMultiplier, err = positiveFloat(p, "backoff_multiplier", r.BackoffMultiplier); err != nil {
		return nil, bad("backoff_multiplier", err)
	}
	if v, ok := p["codes"]; ok {
		if r.Codes, err = parseGRPCCodes(v); err != nil {
			return nil, bad("codes", err)
		}
	}
	return r, nil
}

func parseGRPCThrottling(seg proxyspec.Segment) (*GRPCThrottling, error) {
	if err := seg.CheckKeys(grpcThrottlingKeys); err != nil {
		return nil, err
	}
	th := &GRPCThrottling{MaxTokens: GRPCThrottlingMaxTokens, TokenRatio: GRPCThrottlingTokenRatio}
	if v, ok := seg.Params["max_tokens"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("%s: max_tokens: want an integer within [1, 1000] (gRFC A6: (0, 1000]), got %q", seg.Name, v)
		}
		th.MaxTokens = n
	}
	var err error
	if th.TokenRatio, err = positiveFloat(seg.Params, "token_ratio", th.TokenRatio); err != nil {
		return nil, fmt.Errorf("%s: token_ratio: %w", seg.Name, err)
	}
	return th, nil
}

func positiveDuration(p map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := p[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a positive duration like 25ms, got %q", v)
	}
	return d, nil
}

func positiveFloat(p map[string]string, key string, def float64) (float64, error) {
	v, ok := p[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a number > 0, got %q", v)
	}
	return f, nil
}

// parseGRPCCodes reads a "|"-separated list of status code names, each
// once, and returns them in code order.
func parseGRPCCodes(v string) ([]string, error) {
	type named struct {
		code int
		name string
	}
	var list []named
	for name := range strings.SplitSeq(v, "|") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("empty status code name in %q; want names like UNAVAILABLE|RESOURCE_EXHAUSTED", v)
		}
		c, err := grpcCode(name)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(list, func(n named) bool { return n.name == name }) {
			return nil, fmt.Errorf("%s listed twice", name)
		}
		list = append(list, named{int(c), name})
	}
	slices.SortFunc(list, func(a, b named) int { return a.code - b.code })
	names := make([]string, len(list))
	for i, n := range list {
		names[i] = n.name
	}
	return names, nil
}

// segment returns r as a spec segment, every parameter given.
func (r *GRPCRetry) segment() proxyspec.Segment {
	return proxyspec.Segment{Name: grpcRetrySegment, Params: map[string]string{
		"max_attempts":       strconv.Itoa(r.MaxAttempts),
		"initial_backoff":    r.InitialBackoff.String(),
		"max_backoff":        r.MaxBackoff.String(),
		"backoff_multiplier": formatNumber(r.BackoffMultiplier),
		"codes":              strings.Join(r.Codes, "|"),
	}}
}

// segment returns th as a spec segment, every parameter given.
func (th *GRPCThrottling) segment() proxyspec.Segment {
	return proxyspec.Segment{Name: grpcThrottlingSegment, Params: map[string]string{
		"max_tokens":  strconv.Itoa(th.MaxTokens),
		"token_ratio": formatNumber(th.TokenRatio),
	}}
}

// formatNumber writes f so that strconv.ParseFloat reads it back exactly
// and the spec grammar takes it (no exponent, whose "+" would split it).
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// policyJSON is r as the service config's retryPolicy.
func (r *GRPCRetry) policyJSON() map[string]any {
	return map[string]any{
		"maxAttempts":          r.MaxAttempts,
		"initialBackoff":       durationJSON(r.InitialBackoff),
		"maxBackoff":           durationJSON(r.MaxBackoff),
		"backoffMultiplier":    r.BackoffMultiplier,
		"retryableStatusCodes": r.Codes,
	}
}

// durationJSON writes d (> 0) as a protobuf JSON duration: seconds with
// up to 9 decimals and an "s".
func durationJSON(d time.Duration) string {
	s := fmt.Sprintf("%d.%09d", d/time.Second, d%time.Second)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") + "s"
}

// grpcCode reads a gRPC status code by its spec name (doc/statuscodes.md,
// e.g. "UNAVAILABLE"), as grpc-go's service config does; OK, which is no
// failure, is refused.
func grpcCode(name string) (codes.Code, error) {
	var c codes.Code
	if err := c.UnmarshalJSON([]byte(strconv.Quote(name))); err != nil || c == codes.OK || strings.ToUpper(name) != name {
		return 0, fmt.Errorf("unknown gRPC status code %q, want a name like UNAVAILABLE or RESOURCE_EXHAUSTED (not OK)", name)
	}
	return c, nil
}

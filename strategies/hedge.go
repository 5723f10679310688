package strategies

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of the hedge wrapper.
const (
	DefaultHedgeMax = 2
	maxHedgeMax     = 10
	// hedgeWindow is how many recent attempt latencies a percentile delay
	// is computed from, and hedgeWarmup how many it needs before the first
	// hedge: with fewer, nothing is hedged.
	hedgeWindow = 1000
	hedgeWarmup = 100
	// hedgeRefresh is how many new latencies pass between two
	// computations of the percentile.
	hedgeRefresh = 50
)

func init() {
	registerWrapper("hedge", []string{"delay", "max"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		cfg, err := parseHedgeConfig(params)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return &hedgeLayer{passThrough: passThrough{inner}, cfg: cfg}
		}, nil
	})
}

// HedgeConfig is the hedge wrapper's configuration: the hedged requests of
// Dean and Barroso's "The Tail at Scale".
//
//   - delay (default p95): how long a request waits for an answer before
//     another attempt is sent, to another host; again after each further
//     delay, up to max attempts in flight. A duration ("20ms") is fixed;
//     "pNN" (p50 to p99.9) follows the strategy's own recent latency: the
//     NNth percentile of the last 1000 attempts that got an answer,
//     recomputed every 50. Until 100 attempts have been answered nothing
//     is hedged.
//   - max (default 2): the most attempts of one request, the first
//     included.
//
// The first attempt that does not fail wins; the others are cancelled, and
// their instances count them as cancelled, not as failures. An attempt
// that fails while another is in flight waits for it; when all have
// failed the request fails (or is retried, with a retry wrapper).
// Departure: Envoy hedges only on a per-try timeout, and gRPC's
// hedgingPolicy, which grpc-go does not implement, sends a copy per delay
// with no percentile; the paper's hedge at the 95th percentile is this
// wrapper's default.
type HedgeConfig struct {
	Delay    time.Duration // fixed delay; 0 when Quantile is set
	Quantile float64       // e.g. 0.95; 0 for a fixed delay
	Max      int
}

func parseHedgeConfig(params map[string]string) (HedgeConfig, error) {
	cfg := HedgeConfig{Quantile: 0.95}
	if v, ok := params["delay"]; ok {
		if p, isQ := strings.CutPrefix(v, "p"); isQ {
			q, err := strconv.ParseFloat(p, 64)
			if err != nil || !(q >= 50 && q <= 99.9) { // NaN too
				return cfg, fmt.Errorf("delay: want a duration like 20ms or a percentile p50 to p99.9, got %q", v)
			}
			cfg.Quantile = q / 100
		} else {
			d, err := durationParam(params, "delay", 0)
			if err != nil {
				return cfg, fmt.Errorf("%w, or a percentile like p95", err)
			}
			cfg.Delay, cfg.Quantile = d, 0
		}
	}
	var err error
	if cfg.Max, err = intParam(params, "max", DefaultHedgeMax, 2); err != nil {
		return cfg, err
	}
	if cfg.Max > maxHedgeMax {
		return cfg, fmt.Errorf("max: want at most %d attempts, got %d", maxHedgeMax, cfg.Max)
	}
	return cfg, nil
}

// hedgeLayer is the hedge wrapper: it passes picks through and keeps the
// recent latencies a percentile delay is read from.
type hedgeLayer struct {
	passThrough
	cfg     HedgeConfig
	lat     []time.Duration // ring of recent answered latencies
	next    int             // where the next goes
	fresh   int             // latencies since the percentile was computed
	delay   time.Duration   // the current percentile; 0 before warm-up
	scratch []time.Duration
}

// observe records an attempt's outcome for the percentile.
func (h *hedgeLayer) observe(o Outcome) {
	if h.cfg.Quantile == 0 || o.Status == 0 || o.Cancelled {
		return
	}
	if len(h.lat) < hedgeWindow {
		h.lat = append(h.lat, o.Latency)
	} else {
		h.lat[h.next] = o.Latency
		h.next = (h.next + 1) % hedgeWindow
	}
	h.fresh++
	if len(h.lat) >= hedgeWarmup && (h.delay == 0 || h.fresh >= hedgeRefresh) {
		h.fresh = 0
		h.scratch = append(h.scratch[:0], h.lat...)
		i := int(h.cfg.Quantile*float64(len(h.scratch))+0.5) - 1
		h.delay = max(nth(h.scratch, min(max(i, 0), len(h.scratch)-1)), time.Microsecond)
	}
}

// hedgeDelay is the current delay; ok is false before a percentile delay
// has its warm-up.
func (h *hedgeLayer) hedgeDelay() (time.Duration, bool) {
	if h.cfg.Quantile == 0 {
		return h.cfg.Delay, true
	}
	return h.delay, h.delay > 0
}

// nth returns the k-th smallest of v (0-based), reordering v: Hoare's
// selection, in time linear on average where a sort is n log n. The
// pivot is the median of the first, middle and last values, so the
// result, like the order of v afterwards, depends on v alone.
func nth(v []time.Duration, k int) time.Duration {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, c := v[lo], v[mid], v[hi]
		p := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

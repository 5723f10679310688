package live

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// backendBase is the scheme and host of every target; the balancing
// transport replaces the host with the instance it picks.
const backendBase = "http://lbchaos-backend"

// newTargeter returns the targets of exp's load: request k (the k-th call)
// is the experiment's request engine.RequestPicker chooses for k (GET /
// without requests), carrying its key, if any, in strategies.KeyHeader —
// the one header the transport client reads keys from. *start is the
// attack's start, for keys that change over time (a hot key from some
// point on). The targeter is generator gen's of gens: its k-th call is
// request k*gens+gen of the whole load.
func newTargeter(exp *experiments.Experiment, start *time.Time, gen, gens int) vegeta.Targeter {
	keys := engine.ExperimentKeys(exp)
	pick := engine.NewRequestPicker(exp.Requests, exp.Seed)
	var tgts []vegeta.Target
	if pick == nil {
		tgts = []vegeta.Target{{Method: http.MethodGet, URL: backendBase + "/"}}
	} else {
		for _, r := range exp.Requests.List {
			tgts = append(tgts, vegeta.Target{Method: r.Method, URL: backendBase + r.Path, Header: r.Header, Body: r.Body})
		}
	}
	var next atomic.Uint64
	return func(t *vegeta.Target) error {
		k := (next.Add(1)-1)*uint64(gens) + uint64(gen)
		i := 0
		if pick != nil {
			i = pick.Pick(k)
		}
		*t = tgts[i]
		if keys == nil {
			return nil
		}
		if key, ok := keys.Draw(k, time.Since(*start)); ok {
			// Target.Request copies the header; the shared one is not changed.
			h := make(http.Header, len(t.Header)+1)
			for name, vs := range t.Header {
				h[name] = vs
			}
			h.Set(strategies.KeyHeader, strconv.FormatUint(key, 10))
			t.Header = h
		}
		return nil
	}
}

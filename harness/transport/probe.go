package transport

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// Probe actively checks instance id as pc says, every interval, and
// reports each result to every balancer, until ctx is done. A probe is
// healthy when it answers 2xx within the timeout. An instance outside the
// client's endpoints (SetEndpoints), or without an address yet, is not
// probed until it is back, as a balancer checks only the endpoints its
// discovery gives it.
func Probe(ctx context.Context, pc strategies.ProbeConfig, id int, bal *Client, lbs []*strategies.Balancer) {
	client := &http.Client{Timeout: pc.Timeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(pc.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		target := bal.Target(id)
		if target == nil || !bal.endpoint(id) {
			continue
		}
		u := *target
		u.Path = pc.Path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		healthy := false
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			healthy = resp.StatusCode >= 200 && resp.StatusCode < 300
		}
		if ctx.Err() != nil {
			return
		}
		for _, lb := range lbs {
			lb.ReportProbe(id, healthy)
		}
	}
}

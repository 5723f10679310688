package engine

import (
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/strategies"
)

func TestLoadPolling(t *testing.T) {
	tests := []struct {
		strategy string
		interval time.Duration // 0: none
	}{
		{"p2c", 0},
		{"server-load", 0},
		{"server-load(report_interval=1s)", time.Second},
		{"server-load(report_interval=250ms,choice_count=0)+eject", 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			exp, err := experiments.Parse("x.yaml", []byte("name: x\nduration: 1s\nrate: 10\nreplicas: 3\ninstances: {count: 4, service: {dist: fixed, value: 10ms}}\nstrategies: [\""+tt.strategy+"\"]\n"))
			if err != nil {
				t.Fatal(err)
			}
			lbs, err := NewBalancers(exp, tt.strategy, strategies.SystemClock{}, NewEventLog(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			interval, board, ok := LoadPolling(lbs)
			if ok != (tt.interval > 0) || interval != tt.interval {
				t.Fatalf("LoadPolling = %v, %v; want %v", interval, ok, tt.interval)
			}
			if got, ok := ReadsLoads(tt.strategy); got != tt.interval || ok != (tt.interval > 0) {
				t.Errorf("ReadsLoads = %v, %v; want %v", got, ok, tt.interval)
			}
			if !ok {
				return
			}
			// One board for every replica: what the poller publishes, each reads.
			for r, lb := range lbs {
				if lb.LoadSource() != board {
					t.Errorf("replica %d reads another board", r)
				}
			}
			board.Publish([]float64{5, 5, 0, 5})
			for r, lb := range lbs {
				if !fullScan(tt.strategy) {
					continue
				}
				for range 10 {
					ep, done := lb.Pick(strategies.Request{})
					done(strategies.Outcome{Status: 200})
					if ep != 2 {
						t.Fatalf("replica %d picked %d, want 2, the least loaded of the snapshot", r, ep)
					}
				}
			}
		})
	}
}

func fullScan(spec string) bool {
	s, err := strategies.Parse(spec)
	return err == nil && s.BaseParams["choice_count"] == "0"
}

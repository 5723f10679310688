package reports

import (
	"math"
	"testing"
)

func series(id int, reqs, errs []int64) InstanceSeries {
	return InstanceSeries{ID: id, Requests: reqs, Errors: errs, P50Ms: make([]float64, len(reqs)), P99Ms: make([]float64, len(reqs))}
}

func TestDerive(t *testing.T) {
	tests := []struct {
		name      string
		faults    []FaultWindow
		instances []Instance
		timeline  []InstanceSeries
		unrouted  []int64
		elapsed   float64
		maxAvg    float64
		jump      float64
		shareSD   float64
		instSD    []float64
		errorTail float64 // -1: absent
	}{
		{
			name:      "even and steady",
			instances: []Instance{{ID: 0, Requests: 30}, {ID: 1, Requests: 30}},
			timeline:  []InstanceSeries{series(0, []int64{10, 10, 10}, []int64{0, 0, 0}), series(1, []int64{10, 10, 10}, []int64{0, 0, 0})},
			elapsed:   3, maxAvg: 1, jump: 0, shareSD: 0, instSD: []float64{0, 0}, errorTail: -1,
		},
		{
			name:      "one instance drained in the last second",
			instances: []Instance{{ID: 0, Requests: 20}, {ID: 1, Requests: 40}},
			timeline:  []InstanceSeries{series(0, []int64{10, 10, 0}, []int64{0, 0, 0}), series(1, []int64{10, 10, 20}, []int64{0, 0, 0})},
			// shares of instance 0: 0.5, 0.5, 0 -> mean 1/3, sd sqrt(((1/6)^2*2+(1/3)^2)/3)
			elapsed: 3, maxAvg: 40.0 * 2 / 60, jump: 10, shareSD: math.Sqrt((2.0/36 + 1.0/9) / 3), instSD: []float64{math.Sqrt((2.0/36 + 1.0/9) / 3), math.Sqrt((2.0/36 + 1.0/9) / 3)}, errorTail: -1,
		},
		{
			name:      "errors go on two seconds past the fault",
			faults:    []FaultWindow{{Instance: 0, StartS: 1, EndS: 2}},
			instances: []Instance{{ID: 0, Requests: 500}},
			timeline:  []InstanceSeries{series(0, []int64{100, 100, 100, 100, 100}, []int64{0, 50, 50, 50, 1})},
			// Second 3 (3..4 s) is the last above 1%: the tail ends at 4 s, 2 s after the fault.
			elapsed: 5, maxAvg: 1, jump: 0, shareSD: 0, instSD: []float64{0}, errorTail: 2,
		},
		{
			name:      "errors stop with the fault",
			faults:    []FaultWindow{{Instance: 0, StartS: 1, EndS: 3}, {Instance: 0, StartS: 4, EndS: 5}},
			instances: []Instance{{ID: 0, Requests: 500}},
			timeline:  []InstanceSeries{series(0, []int64{100, 100, 100, 100, 100}, []int64{0, 50, 50, 0, 0})},
			// The second fault lasts to the end of the run, so the first one's end counts.
			elapsed: 5, maxAvg: 1, jump: 0, shareSD: 0, instSD: []float64{0}, errorTail: 0,
		},
		{
			name:      "requests that reached no instance count as errors",
			faults:    []FaultWindow{{Instance: 0, StartS: 1, EndS: 2}},
			instances: []Instance{{ID: 0, Requests: 300}},
			timeline:  []InstanceSeries{series(0, []int64{100, 100, 50, 50, 0}, []int64{0, 50, 0, 0, 0})},
			unrouted:  []int64{0, 0, 50, 50, 0},
			// Seconds 2 and 3 failed half their requests with no instance to go to;
			// instance 0 had all of seconds 0 and 1 and half of 2 and 3 (sd 0.25).
			elapsed: 5, maxAvg: 1, jump: 50, shareSD: 0.25, instSD: []float64{0.25}, errorTail: 2,
		},
		{
			name:      "buckets past an interrupted attack are left out",
			instances: []Instance{{ID: 0, Requests: 10}},
			timeline:  []InstanceSeries{series(0, []int64{10, 0, 0}, []int64{0, 0, 0})},
			elapsed:   1, maxAvg: 1, jump: 0, shareSD: 0, instSD: []float64{0}, errorTail: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := &Summary{DurationS: 5, Faults: tt.faults, Strategies: []Strategy{{
				ElapsedS: tt.elapsed, Instances: tt.instances,
				Timeline: &Timeline{BucketS: 1, Instances: tt.timeline, Unrouted: tt.unrouted},
			}}}
			Derive(sum)
			Derive(sum) // idempotent
			st := sum.Strategies[0]
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			near("MaxAvgLoad", st.MaxAvgLoad, tt.maxAvg)
			near("MaxJumpRps", st.MaxJumpRps, tt.jump)
			near("ShareStddev", st.ShareStddev, tt.shareSD)
			for i, want := range tt.instSD {
				near("instance share stddev", st.Instances[i].ShareStddev, want)
			}
			switch {
			case tt.errorTail < 0 && st.ErrorTailS != nil:
				t.Errorf("ErrorTailS = %v, want absent", *st.ErrorTailS)
			case tt.errorTail >= 0 && st.ErrorTailS == nil:
				t.Errorf("ErrorTailS absent, want %v", tt.errorTail)
			case tt.errorTail >= 0:
				near("ErrorTailS", *st.ErrorTailS, tt.errorTail)
			}
		})
	}
}

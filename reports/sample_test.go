package reports

import (
	"flag"
	"math"
	"math/rand/v2"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// sampleSummary is a fast-fail-like run: 10 instances, instance 0 answers
// 503 after 1 ms, three strategies. Every value is fixed or drawn from a
// seeded source, so renderings are reproducible.
func sampleSummary() *Summary {
	const (
		instances = 10
		buckets   = 30
	)
	s := &Summary{
		Schema:          Schema,
		Experiment:      "fast-fail",
		Engine:          "real",
		Backends:        "process",
		Seed:            1,
		Started:         time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC),
		DurationS:       30,
		TargetRate:      4000,
		SlowThresholdMs: 1000,
		FaultyInstances: []int{0},
		Description:     "One of ten instances answers 503 after 1 ms; its health check keeps passing.",
		Arrival:         "poisson",
		TimeoutMs:       30000,
		Instances:       instances,
		Workers:         8,
		Service:         "fixed 10ms",
		Faults:          []FaultWindow{{Instance: 0, Mode: "error", Detail: "status=503 delay=1ms", StartS: 0, EndS: 30}},
		Notes:           []string{"least-inflight: the generator fell behind (achieved 3712 of 4000 req/s)."},
		GoVersion:       "go1.26.8",
		CPUs:            8,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type plan struct {
		name      string
		faulty    float64 // share of traffic to instance 0
		behind    bool
		ejections []float64
	}
	for _, pl := range []plan{
		{name: "round-robin", faulty: 0.1},
		{name: "least-inflight", faulty: 0.45, behind: true},
		{name: "least-inflight+eject(consecutive=5,duration=5s)", faulty: 0.0003, ejections: []float64{0.2, 5.3, 10.4, 15.5, 20.6, 25.7}},
	} {
		st := Strategy{Name: pl.name, GeneratorBehind: pl.behind, ElapsedS: 30}
		rate := 4000.0
		if pl.behind {
			rate = 3712
			st.SendLagMs = LagStats{P50: 2.1, P99: 48, Max: 130}
		}
		st.Requests = int64(rate * 30)
		st.AchievedRate = rate
		tl := &Timeline{BucketS: 1}
		var errs int64
		for id := range instances {
			share := (1 - pl.faulty) / (instances - 1)
			if id == 0 {
				share = pl.faulty
			}
			in := Instance{ID: id, Faulty: id == 0, Share: share, Requests: int64(math.Round(share * float64(st.Requests)))}
			ser := InstanceSeries{ID: id}
			for k := range buckets {
				req := int64(math.Round(share * rate * (0.9 + 0.2*rng.Float64())))
				if id == 0 && len(pl.ejections) > 0 && k%5 != 0 {
					req = 0
				}
				var e int64
				p50, p99 := 10+rng.Float64()*0.3, 11+rng.Float64()*4
				if id == 0 {
					e = req
					p50, p99 = 1+rng.Float64()*0.05, 1.2+rng.Float64()*0.3
				} else if rng.IntN(10) == 0 {
					e = int64(rng.IntN(3))
				}
				if req == 0 {
					e, p50, p99 = 0, 0, 0
				}
				ser.Requests = append(ser.Requests, req)
				ser.Errors = append(ser.Errors, e)
				ser.P50Ms = append(ser.P50Ms, p50)
				ser.P99Ms = append(ser.P99Ms, p99)
			}
			if id == 0 {
				in.Errors = in.Requests
				in.ErrorRatio = 1
				in.LatencyMs = Latency{Mean: 1.02, P50: 1.01, P90: 1.1, P99: 1.4, P999: 2, Max: 3.1}
			} else {
				in.Errors = int64(id % 3)
				in.ErrorRatio = float64(in.Errors) / float64(in.Requests)
				in.LatencyMs = Latency{Mean: 10.2, P50: 10.1, P90: 10.4, P99: 11 + float64(id)/10, P999: 12, Max: 20.1 + float64(id)}
			}
			errs += in.Errors
			st.Instances = append(st.Instances, in)
			tl.Instances = append(tl.Instances, ser)
		}
		st.Timeline = tl
		st.ErrorRatio = float64(errs) / float64(st.Requests)
		st.SuccessRatio = 1 - st.ErrorRatio
		st.FaultyShare = pl.faulty
		st.LatencyMs = Latency{Mean: 9.2, P50: 10.1, P90: 10.4, P99: 11.3, P999: 12.5, Max: 25.6}
		if pl.faulty > 0.2 {
			st.LatencyMs.P50 = 1.05
		}
		for _, t := range pl.ejections {
			st.Events = append(st.Events, Event{TimeS: t, Instance: 0, Kind: "eject"}, Event{TimeS: t + 5, Instance: 0, Kind: "readmit"})
		}
		st.Ejections = len(pl.ejections)
		st.Percentiles = samplePercentiles(rng, pl.faulty)
		s.Strategies = append(s.Strategies, st)
	}
	return s
}

// samplePercentiles is a latency-by-percentile curve at the percentiles
// the harness reports: about 10 ms at the median and a tail that grows with
// the faulty share.
func samplePercentiles(rng *rand.Rand, faulty float64) []PercentilePoint {
	var out []PercentilePoint
	for i := 0; i <= 32; i++ {
		x := 2 * math.Pow(10, float64(i)/8) // 1/(1-p)
		p := math.Round(100*(1-1/x)*1e4) / 1e4
		d := math.Log10(x) - math.Log10(2)
		ms := 10 + 0.4*d + (0.5+20*faulty)*d*d*d*(1+0.1*rng.Float64())
		out = append(out, PercentilePoint{Percentile: p, LatencyMs: math.Round(ms*1000) / 1000})
	}
	return append(out, PercentilePoint{Percentile: 100, LatencyMs: math.Round(2500+500*rng.Float64()) / 10})
}

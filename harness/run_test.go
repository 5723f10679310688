package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
)

// scripted is an engine whose measurements a test writes: it checks the
// driver's side of the seam (order, summary, notes, error contract), not
// any measuring.
type scripted struct {
	info     engine.Info
	check    []string
	checkErr error
	// measure answers job.Index; nil means a plain complete measurement.
	measure func(ctx context.Context, job engine.Job) (*engine.Measurement, error)
	calls   []string
}

func (s *scripted) Info() engine.Info { return s.info }

func (s *scripted) Check(*experiments.Experiment) ([]string, error) { return s.check, s.checkErr }

func (s *scripted) Measure(ctx context.Context, job engine.Job) (*engine.Measurement, error) {
	s.calls = append(s.calls, job.Name())
	if s.measure != nil {
		return s.measure(ctx, job)
	}
	return complete(job.Name()), nil
}

// complete is a measurement of 1000 requests in 10 s, all scheduled ones.
func complete(name string) *engine.Measurement {
	return &engine.Measurement{
		Strategy:  reports.Strategy{Name: name, Requests: 1000, SuccessRatio: 1, Instances: []reports.Instance{{ID: 0, Requests: 1000, Share: 1}}},
		Sent:      1000,
		Scheduled: 1000,
		Elapsed:   10 * time.Second,
		Ejections: 2,
		Events:    []reports.Event{{TimeS: 1, Instance: 0, Kind: "eject"}},
	}
}

const driverExp = `
seed: 1
duration: 10s
rate: 100
instances: {count: 1, service: {dist: fixed, value: 1ms}}
strategies: [a-strategy, p2c, random]
`

func TestRunAssemblesTheSummary(t *testing.T) {
	exp := runtest.MustExperiment(t, "driver", strings.Replace(driverExp, "a-strategy", "round-robin", 1))
	eng := &scripted{info: engine.Info{Engine: "e", Backends: "b"}, check: []string{"run-level note"},
		measure: func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
			switch job.Index {
			case 0:
				return &engine.Measurement{Skipped: "round-robin: skipped here"}, nil
			case 1:
				m := complete(job.Name())
				m.Sent, m.Scheduled = 900, 1000 // behind
				m.Aborted, m.Unattributed, m.EventDrops, m.CapHits, m.ConnBound = 1, 2, 3, 4, 64
				m.Notes = []string{"p2c: engine note"}
				return m, nil
			}
			return complete(job.Name()), nil
		}}
	sum, err := Run(context.Background(), exp, Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Engine != "e" || sum.Backends != "b" || sum.Partial || len(sum.Strategies) != 2 {
		t.Fatalf("engine %q backends %q partial %v strategies %d", sum.Engine, sum.Backends, sum.Partial, len(sum.Strategies))
	}
	p2c := sum.Strategies[0]
	if p2c.AchievedRate != 90 || !p2c.GeneratorBehind || p2c.ElapsedS != 10 || p2c.Ejections != 2 || len(p2c.Events) != 1 {
		t.Errorf("p2c: rate %v behind %v elapsed %v ejections %d events %d", p2c.AchievedRate, p2c.GeneratorBehind, p2c.ElapsedS, p2c.Ejections, len(p2c.Events))
	}
	if sum.Strategies[1].GeneratorBehind {
		t.Error("random: behind, with every scheduled request sent")
	}
	notes := strings.Join(sum.Notes, "\n")
	for _, want := range []string{"run-level note", "round-robin: skipped here", "p2c: engine note", "p2c: the generator fell behind: 900 requests sent where the schedule had 1000",
		"p2c: 4 requests found their instance at the bound of 64 connections", "p2c: 1 requests in flight", "p2c: 2 requests reached no instance", "p2c: 3 ejection events beyond"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if i, j := strings.Index(notes, "run-level note"), strings.Index(notes, "round-robin: skipped"); i > j {
		t.Errorf("run-level notes come after the strategies':\n%s", notes)
	}
}

func TestRunErrorContract(t *testing.T) {
	exp := runtest.MustExperiment(t, "driver", strings.Replace(driverExp, "a-strategy", "round-robin", 1))
	t.Run("check fails before anything runs", func(t *testing.T) {
		eng := &scripted{checkErr: errors.New("no such backends")}
		sum, err := Run(context.Background(), exp, Options{Engine: eng})
		if sum != nil || err == nil || err.Error() != "no such backends" || len(eng.calls) != 0 {
			t.Errorf("summary %v, err %v, calls %v", sum, err, eng.calls)
		}
	})
	t.Run("an error mid-strategy keeps what was measured", func(t *testing.T) {
		eng := &scripted{measure: func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
			if job.Index == 1 {
				m := complete(job.Name())
				m.Interrupted = true
				return m, errors.New("fault failed")
			}
			return complete(job.Name()), nil
		}}
		sum, err := Run(context.Background(), exp, Options{Engine: eng})
		if err == nil || err.Error() != "strategy p2c: fault failed" {
			t.Fatalf("err %v", err)
		}
		if sum == nil || !sum.Partial || len(sum.Strategies) != 2 || !sum.Strategies[1].Partial || len(eng.calls) != 2 {
			t.Errorf("summary %+v, calls %v", sum, eng.calls)
		}
	})
	t.Run("an error before the attack", func(t *testing.T) {
		eng := &scripted{measure: func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
			if job.Index == 0 {
				return nil, errors.New("backends did not start")
			}
			return complete(job.Name()), nil
		}}
		sum, err := Run(context.Background(), exp, Options{Engine: eng})
		if err == nil || !strings.Contains(err.Error(), "strategy round-robin: backends did not start") {
			t.Fatalf("err %v", err)
		}
		if sum == nil || sum.Partial || len(sum.Strategies) != 0 {
			t.Errorf("summary %+v", sum)
		}
	})
	t.Run("interrupted before an attack", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		eng := &scripted{measure: func(ctx context.Context, job engine.Job) (*engine.Measurement, error) {
			if job.Index == 1 {
				cancel() // while its backends start, say
				return nil, ctx.Err()
			}
			return complete(job.Name()), nil
		}}
		sum, err := Run(ctx, exp, Options{Engine: eng})
		if !errors.Is(err, ErrInterrupted) || !sum.Partial || len(sum.Strategies) != 1 {
			t.Fatalf("err %v, summary %+v; want an interrupted run with one strategy", err, sum)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		eng := &scripted{measure: func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
			m := complete(job.Name())
			if job.Index == 1 {
				cancel()
				m.Interrupted = true
			}
			return m, nil
		}}
		sum, err := Run(ctx, exp, Options{Engine: eng})
		if !errors.Is(err, ErrInterrupted) || !sum.Partial || len(sum.Strategies) != 2 || !sum.Strategies[1].Partial || len(eng.calls) != 2 {
			t.Fatalf("err %v, summary %+v, calls %v", err, sum, eng.calls)
		}
		if !strings.Contains(strings.Join(sum.Notes, "\n"), "The run was interrupted: 2 of 3 strategies measured") {
			t.Errorf("notes %q", sum.Notes)
		}
	})
}

func TestRunExpectations(t *testing.T) {
	body := strings.Replace(driverExp, "a-strategy", "round-robin", 1) + `expect:
  - {strategy: p2c, error_ratio: "> 0.5"}
  - {strategy: random, error_ratio: "< 0.5"}
key_metric: error_ratio
`
	exp := runtest.MustExperiment(t, "driver", body)
	sum, err := Run(context.Background(), exp, Options{Engine: &scripted{}})
	var failed *ExpectationsFailed
	if !errors.As(err, &failed) || failed.Failed != 1 || failed.Total != 2 {
		t.Fatalf("err %v, want 1 of 2 expectations failed", err)
	}
	if sum.KeyMetric != "error_ratio" || len(sum.Expectations) != 2 || sum.Expectations[0].Passed || !sum.Expectations[1].Passed {
		t.Errorf("key metric %q, expectations %+v", sum.KeyMetric, sum.Expectations)
	}
	sum, err = Run(context.Background(), exp, Options{Engine: &scripted{}, Advisory: true})
	if err != nil {
		t.Fatalf("advisory run: %v", err)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "so they are advisory") {
		t.Errorf("notes %q", sum.Notes)
	}
}

func TestRunVirtualEngineRecordsNoMachine(t *testing.T) {
	exp := runtest.MustExperiment(t, "driver", strings.Replace(driverExp, "a-strategy", "round-robin", 1))
	epoch := time.Unix(0, 0).UTC()
	sum, err := Run(context.Background(), exp, Options{Engine: &scripted{info: engine.Info{Engine: "sim", Backends: "sim", Virtual: true, Epoch: epoch}}})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Started.Equal(epoch) || sum.GoVersion != "" || sum.CPUs != 0 {
		t.Errorf("started %v, go %q, cpus %d", sum.Started, sum.GoVersion, sum.CPUs)
	}
}

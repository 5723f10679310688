package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/sim"
)

// Two instances of one worker, 10 ms each: 200 req/s in all. Instance 0
// turns ten times slower when the faults are on.
const capacityExp = `
seed: 1
duration: 20s
rate: 100
timeout: 10s
instances: {count: 2, workers: 1, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, fault: {mode: slow, factor: 10}}
strategies: [round-robin, least-inflight]
key_metric: p99_ms
`

func simConfig(t *testing.T, varies ...string) Config {
	t.Helper()
	g, err := ParseGrid(varies)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Exp: runtest.MustExperiment(t, "capacity", capacityExp), Grid: g, Varies: varies,
		Engine: func() engine.Engine { return sim.Engine{} }, EngineName: "sim", Dir: t.TempDir()}
}

func TestSweepKnees(t *testing.T) {
	c := simConfig(t, "rate=50,100,150,250,300", "faults=on,off")
	var err error
	if c.Bound, err = ParseBound("p99_ms < 200"); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 10 || res.Partial {
		t.Fatalf("%d points, partial %v", len(res.Points), res.Partial)
	}
	// Without the fault both keep p99 within 200 ms up to 150 req/s (75%
	// of capacity) and not at 250 (over it). With it, round robin sends
	// the slow instance half the load, 25 req/s for a capacity of 10:
	// over the bound at once.
	knee := map[string]string{}
	for _, k := range res.Knees {
		v := "none"
		if k.Rate != nil {
			v = strconv.FormatFloat(*k.Rate, 'g', -1, 64)
		}
		knee[k.Strategy+" faults="+k.Group["faults"]] = v
	}
	want := map[string]string{"round-robin faults=off": "150", "least-inflight faults=off": "150", "round-robin faults=on": "none"}
	for k, v := range want {
		if knee[k] != v {
			t.Errorf("knee of %s: %s, want %s (all: %v)", k, knee[k], v, knee)
		}
	}
	md := Markdown(res)
	for _, s := range []string{"### Knees (p99_ms < 200)", "`round-robin` keeps the bound at no rate swept with the fault, and up to 150 req/s without it.", "| 10 | 300 | off | `least-inflight` |"} {
		if !strings.Contains(md, s) {
			t.Errorf("sweep.md lacks %q:\n%s", s, md)
		}
	}
	// The files: sweep.json as returned, sweep.csv a row per point and
	// strategy, and each run's summary.
	var back Result
	data, err := os.ReadFile(filepath.Join(c.Dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil || back.Schema != Schema || len(back.Points) != 10 || len(back.Knees) != 4 {
		t.Fatalf("sweep.json: %v, %+v", err, back)
	}
	f, err := os.Open(filepath.Join(c.Dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 21 || strings.Join(rows[0][:5], ",") != "point,rate,faults,strategy,runs" || rows[0][5] != "p99_ms" {
		t.Fatalf("sweep.csv: %v, %d rows, head %q", err, len(rows), rows[0])
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "point-007", "rep-1", "summary.json")); err != nil {
		t.Error(err)
	}
	if ps, _ := filepath.Glob(filepath.Join(c.Dir, "point-007", "rep-1", "*")); len(ps) != 1 {
		t.Errorf("a point writes its summary alone, got %q", ps)
	}
}

func TestSweepApply(t *testing.T) {
	c := simConfig(t, "timeout=2s", "replicas=3", "faults=off", "instances=4", "least-inflight+eject(consecutive={7})")
	e, err := c.Grid.Apply(c.Exp, c.Grid.Points()[0])
	if err != nil {
		t.Fatal(err)
	}
	if e.Timeout.String() != "2s" || e.Replicas != 3 || len(e.Faults) != 0 || e.Instances.Count != 4 ||
		len(e.Strategies) != 1 || e.Strategies[0] != "least-inflight+eject(consecutive=7)" || e.Expect != nil {
		t.Errorf("applied: timeout %v, replicas %d, faults %v, instances %d, strategies %q", e.Timeout, e.Replicas, e.Faults, e.Instances.Count, e.Strategies)
	}
	// A point the experiment refuses stops the sweep before its folder
	// is made.
	bad := simConfig(t, "replicas=2,65")
	bad.Dir = filepath.Join(bad.Dir, "sweep")
	if _, err := Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "point 2 (replicas=65)") {
		t.Errorf("a point the experiment refuses: %v", err)
	}
	if _, err := os.Stat(bad.Dir); !os.IsNotExist(err) {
		t.Errorf("a refused sweep made its folder: %v", err)
	}
	badSpec := simConfig(t, "p2c+eject(consecutive={x})")
	if _, err := Run(context.Background(), badSpec); err == nil || !strings.Contains(err.Error(), "point 1 (consecutive=x)") {
		t.Errorf("a strategy the template makes bad: %v", err)
	}
}

// cancelAfter is a log that cancels the sweep once it has n lines.
type cancelAfter struct {
	mu     sync.Mutex
	n      int
	buf    bytes.Buffer
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Count(c.buf.String(), "\n") >= c.n {
		c.cancel()
	}
	return len(p), nil
}

func TestSweepInterruptAndResume(t *testing.T) {
	c := simConfig(t, "rate=50,100,150,200")
	c.Parallel = 1
	full := simConfig(t, "rate=50,100,150,200")
	want, err := Run(context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := &cancelAfter{n: 2, cancel: cancel}
	c.Log = log
	res, err := Run(ctx, c)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "--resume "+c.Dir) {
		t.Fatalf("interrupted sweep: %v", err)
	}
	if !res.Partial || res.Points[0].Runs != 1 || res.Points[3].Runs != 0 || len(res.Points[3].Strategies) != 0 {
		t.Fatalf("partial %v, runs %d..%d", res.Partial, res.Points[0].Runs, res.Points[3].Runs)
	}
	if data, _ := os.ReadFile(filepath.Join(c.Dir, JSONFile)); !strings.Contains(string(data), `"partial": true`) {
		t.Errorf("sweep.json of an interrupted sweep does not say partial")
	}
	var log2 bytes.Buffer
	c.Log, c.Resume = &log2, true
	res, err = Run(context.Background(), c)
	if err != nil || res.Partial {
		t.Fatalf("resumed: %v, partial %v", err, res.Partial)
	}
	if kept := strings.Count(log2.String(), " kept "); kept < 2 || strings.Count(log2.String(), " ran ") > 2 {
		t.Errorf("resumed sweep log:\n%s", log2.String())
	}
	for i := range want.Points {
		g, w := res.Points[i].Strategies, want.Points[i].Strategies
		if len(g) != len(w) || g[0].Median["p99_ms"] != w[0].Median["p99_ms"] {
			t.Errorf("point %d: resumed %+v, uninterrupted %+v", i+1, g, w)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		id        = fs.Int("id", 0, "instance id, sent in the "+faultyserver.InstanceHeader+" header of every response")
		listen    = fs.String("listen", "127.0.0.1:8080", "address to listen on")
		workers   = fs.Int("workers", 8, "requests served at once; 0 = unlimited")
		queue     = fs.Int("queue-limit", 0, "requests allowed to wait in the FIFO queue; 0 = unbounded (a full queue answers 503)")
		service   = fs.String("service", "fixed:10ms", "service time: fixed:D | uniform:MIN,MAX | exponential:MEAN | normal:MEAN,SD | lognormal:MEDIAN,SIGMA, or JSON as in experiment files")
		seed      = fs.Uint64("seed", 1, "seed of the instance's random choices")
		keep      = fs.Bool("keep-abandoned", false, "serve queued requests whose client went away instead of dropping them")
		faultJSON = fs.String("fault", "", `fault to start with, as the control API takes it, e.g. '{"mode":"fail","status":503}'`)
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lbchaos serve [flags]\n\nRuns one fake backend instance. Control API: GET/PUT/DELETE "+faultyserver.ControlPrefix+"fault, GET "+faultyserver.ControlPrefix+"stats, POST "+faultyserver.ControlPrefix+"reset; health: GET /healthz.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := splitPositional(fs, args)
	if err != nil {
		return &exitError{2, err}
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("serve takes no arguments, got %q", pos)}
	}
	dist, err := parseDist(*service)
	if err != nil {
		return &exitError{2, fmt.Errorf("--service: %w", err)}
	}
	cfg := faultyserver.Config{ID: *id, Workers: *workers, QueueLimit: *queue, Service: dist, Seed: *seed, KeepAbandoned: *keep}
	if *faultJSON != "" {
		f, err := faultyserver.ParseFault([]byte(*faultJSON))
		if err != nil {
			return &exitError{2, fmt.Errorf("--fault: %w", err)}
		}
		cfg.InitialFault = f
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "lbchaos serve: "+format+"\n", args...) }
	return faultyserver.Serve(ctx, cfg, *listen, logf)
}

// parseDist reads --service: the shorthand, or the JSON form experiment
// files use ({"dist":"fixed","value":"10ms"}).
func parseDist(s string) (faultyserver.Dist, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		var d faultyserver.Dist
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return d, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return d, d.Validate()
	}
	kind, rest, _ := strings.Cut(s, ":")
	params := strings.Split(rest, ",")
	want := map[string]int{"fixed": 1, "uniform": 2, "exponential": 1, "normal": 2, "lognormal": 2}
	n, ok := want[kind]
	if !ok {
		return faultyserver.Dist{}, fmt.Errorf("unknown distribution %q (fixed, uniform, exponential, normal, lognormal)", kind)
	}
	if rest == "" || len(params) != n {
		return faultyserver.Dist{}, fmt.Errorf("%s takes %d parameter(s), got %q", kind, n, rest)
	}
	dur := func(i int) (faultyserver.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(params[i]))
		if err != nil {
			return 0, fmt.Errorf("%s: want a duration like 10ms, got %q", kind, params[i])
		}
		return faultyserver.Duration(d), nil
	}
	var d faultyserver.Dist
	var err error
	d.Kind = kind
	switch kind {
	case "fixed":
		d.Value, err = dur(0)
	case "exponential":
		d.Mean, err = dur(0)
	case "uniform":
		if d.Min, err = dur(0); err == nil {
			d.Max, err = dur(1)
		}
	case "normal":
		if d.Mean, err = dur(0); err == nil {
			d.SD, err = dur(1)
		}
	case "lognormal":
		if d.Median, err = dur(0); err == nil {
			d.Sigma, err = strconv.ParseFloat(strings.TrimSpace(params[1]), 64)
			if err != nil {
				err = fmt.Errorf("lognormal: sigma: want a number, got %q", params[1])
			}
		}
	}
	if err != nil {
		return d, err
	}
	if err := d.Validate(); err != nil {
		b, _ := json.Marshal(d)
		return d, fmt.Errorf("%w (%s)", err, b)
	}
	return d, nil
}

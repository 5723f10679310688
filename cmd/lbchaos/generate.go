package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/real"
)

// cmdGenerate is one load generator of a distributed run (generators: N),
// started by the run's coordinator: it sends its share of one strategy's
// load to the instances and writes its results to stdout as a generator's
// stream, which the coordinator merges. Internal: its flags are the
// coordinator's, not a user's.
func cmdGenerate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		file     = fs.String("experiment", "-", "the experiment file as run (- = standard input)")
		source   = fs.String("source", "", "where the coordinator loaded the experiment from: named in messages, and relative paths in it resolve against its directory (default: --experiment)")
		strategy = fs.String("strategy", "", "the strategy to run, as the experiment names it (required)")
		gen      = fs.Int("generator", -1, "this generator's index, 0 to --generators - 1 (required)")
		gens     = fs.Int("generators", 0, "how many generators share the load (required)")
		duration = fs.Duration("duration", 0, "attack duration (default: the experiment's)")
		rate     = fs.Float64("rate", 0, "requests per second of the whole load, all generators together (default: the experiment's)")
		seed     = fs.Uint64("seed", 0, "seed (default: the experiment's)")
		start    = fs.String("start", "", "the shared start of the attack, RFC 3339 with nanoseconds (required)")
		conns    = fs.Int("max-conns", 0, "connections per instance at most (default: from the open-file limit)")
		raw      = fs.Bool("raw", false, "add every result, in Vegeta's encoding, to the stream")
		proxy    = fs.String("proxy", "", "a proxy strategy: the base URL of the proxy under test, which every request goes to")
		targets  []string
		ups      = map[string]int{}
	)
	fs.Func("upstream", "with --proxy: NAME=ID, an upstream as the proxy names it and its instance id (repeat)", func(s string) error {
		name, id, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(id)
		if !ok || name == "" || err != nil || n < 0 {
			return fmt.Errorf("want NAME=ID, got %q", s)
		}
		ups[name] = n
		return nil
	})
	fs.Func("target", "an instance's base URL (repeat, one per instance, in id order; required)", func(s string) error {
		targets = append(targets, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lbchaos generate --strategy S --generator K --generators N --start T --target URL... < experiment.yaml\n\n"+
			"Internal: one load generator of a distributed run (generators: N), started by `lbchaos run`.\n"+
			"It writes its results to stdout as lines starting with \"lbchaos-gen/1 \", its progress to stderr.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("generate takes no arguments, got %q", strings.Join(fs.Args(), " "))}
	}
	switch {
	case *strategy == "":
		return &exitError{2, fmt.Errorf("--strategy: required")}
	case *gens < 1:
		return &exitError{2, fmt.Errorf("--generators: must be >= 1, got %d", *gens)}
	case *gen < 0 || *gen >= *gens:
		return &exitError{2, fmt.Errorf("--generator: must be within [0, %d], got %d", *gens-1, *gen)}
	case *start == "":
		return &exitError{2, fmt.Errorf("--start: required")}
	}
	at, err := time.Parse(time.RFC3339Nano, *start)
	if err != nil {
		return &exitError{2, fmt.Errorf("--start: %w", err)}
	}
	urls := make([]*url.URL, len(targets))
	for i, t := range targets {
		if urls[i], err = url.Parse(t); err != nil || urls[i].Host == "" {
			return &exitError{2, fmt.Errorf("--target %q: not a base URL such as http://127.0.0.1:8080", t)}
		}
	}
	var proxyURL *url.URL
	if *proxy != "" {
		if proxyURL, err = url.Parse(*proxy); err != nil || proxyURL.Host == "" {
			return &exitError{2, fmt.Errorf("--proxy %q: not a base URL such as http://127.0.0.1:8080", *proxy)}
		}
	}
	var data []byte
	if *file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		return fmt.Errorf("--experiment: %w", err)
	}
	src := *source
	if src == "" {
		src = *file
	}
	exp, err := experiments.Parse(src, data)
	if err != nil {
		return err
	}
	ov := experiments.Overrides{Duration: *duration, Rate: *rate, Generators: *gens, Strategies: []string{*strategy}}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			ov.Seed = seed
		}
	})
	if exp, err = exp.Apply(ov); err != nil {
		return err
	}
	return real.Generate(ctx, real.GenerateSpec{
		Exp: exp, Strategy: *strategy, Targets: urls, Proxy: proxyURL, Upstreams: ups,
		Generator: *gen, Start: at, Raw: *raw, MaxConnsPerInstance: *conns,
	}, stdout, stderr)
}

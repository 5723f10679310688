package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/live"
)

// generateFlags are the flags of lbchaos generate.
type generateFlags struct {
	file, source, strategy, start, proxy string
	endpoints                            string
	gen, gens, conns                     int
	duration                             time.Duration
	rate                                 float64
	seed                                 uint64
	raw                                  bool
	targets                              []string
	ups                                  map[string]int
}

func bindGenerate(fs *flag.FlagSet) *generateFlags {
	f := &generateFlags{ups: map[string]int{}}
	fs.StringVar(&f.file, "experiment", "-", "the experiment file as run (- = standard input)")
	fs.StringVar(&f.source, "source", "", "where the coordinator loaded the experiment from: named in messages, and relative paths in it resolve against its directory (default: --experiment)")
	fs.StringVar(&f.strategy, "strategy", "", "the strategy to run, as the experiment names it (required)")
	fs.IntVar(&f.gen, "generator", -1, "this generator's index, 0 to --generators - 1 (required)")
	fs.IntVar(&f.gens, "generators", 0, "how many generators share the load (required)")
	fs.DurationVar(&f.duration, "duration", 0, "attack duration (default: the experiment's)")
	fs.Float64Var(&f.rate, "rate", 0, "requests per second of the whole load, all generators together (default: the experiment's)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed (default: the experiment's)")
	fs.StringVar(&f.start, "start", "", "the shared start of the attack, RFC 3339 with nanoseconds (required)")
	fs.IntVar(&f.conns, "max-conns", 0, "connections per instance at most (default: from the open-file limit)")
	fs.BoolVar(&f.raw, "raw", false, "add every result, in Vegeta's encoding, to the stream")
	fs.StringVar(&f.proxy, "proxy", "", "a proxy strategy: the base URL of the proxy under test, which every request goes to")
	fs.Func("upstream", "with --proxy: NAME=ID, an upstream as the proxy names it and its instance id (repeat)", func(s string) error {
		name, id, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(id)
		if !ok || name == "" || err != nil || n < 0 {
			return fmt.Errorf("want NAME=ID, got %q", s)
		}
		f.ups[name] = n
		return nil
	})
	fs.Func("target", "an instance's base URL, or none for an instance that does not exist yet (--endpoints-listen gives its address once it does) (repeat, one per instance, in id order; required)", func(s string) error {
		f.targets = append(f.targets, s)
		return nil
	})
	fs.StringVar(&f.endpoints, "endpoints-listen", "", "serve the endpoints API on this address (e.g. :9091): PUT "+live.EndpointsPath+` {"endpoints": {"<id>": "<base URL>", ...}}, the instances' whole current set, which the strategy then picks among; with the header Authorization: Bearer <token> of $`+faultyserver.TokenEnv+" (without one, only on a loopback address)")
	return f
}

// cmdGenerate is one load generator of a distributed run (generators: N),
// started by the run's coordinator: it sends its share of one strategy's
// load to the instances and writes its results to stdout as a generator's
// stream, which the coordinator merges. Internal: its flags are the
// coordinator's, not a user's.
func cmdGenerate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("generate")
	f := bindGenerate(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("generate takes no arguments, got %q", strings.Join(pos, " "))}
	}
	switch {
	case f.strategy == "":
		return &exitError{2, fmt.Errorf("--strategy: required")}
	case f.gens < 1:
		return &exitError{2, fmt.Errorf("--generators: must be >= 1, got %d", f.gens)}
	case f.gen < 0 || f.gen >= f.gens:
		return &exitError{2, fmt.Errorf("--generator: must be within [0, %d], got %d", f.gens-1, f.gen)}
	case f.start == "":
		return &exitError{2, fmt.Errorf("--start: required")}
	}
	at, err := time.Parse(time.RFC3339Nano, f.start)
	if err != nil {
		return &exitError{2, fmt.Errorf("--start: %w", err)}
	}
	urls := make([]*url.URL, len(f.targets))
	for i, t := range f.targets {
		if t == live.NoTarget {
			if f.endpoints == "" && f.proxy == "" {
				return &exitError{2, fmt.Errorf("--target none (instance %d): an instance that does not exist yet needs --endpoints-listen, through which the coordinator gives its address once it does (or --proxy, which picks the instances itself)", i)}
			}
			continue // nil: no address yet
		}
		if urls[i], err = url.Parse(t); err != nil || urls[i].Host == "" {
			return &exitError{2, fmt.Errorf("--target %q: not a base URL such as http://127.0.0.1:8080, nor none", t)}
		}
	}
	var proxyURL *url.URL
	if f.proxy != "" {
		if proxyURL, err = url.Parse(f.proxy); err != nil || proxyURL.Host == "" {
			return &exitError{2, fmt.Errorf("--proxy %q: not a base URL such as http://127.0.0.1:8080", f.proxy)}
		}
		if f.endpoints != "" {
			return &exitError{2, fmt.Errorf("--endpoints-listen: with --proxy the proxy under test picks the instances, and follows them itself")}
		}
	}
	token := os.Getenv(faultyserver.TokenEnv)
	if f.endpoints != "" {
		if _, _, err := net.SplitHostPort(f.endpoints); err != nil {
			return &exitError{2, fmt.Errorf("--endpoints-listen %q: want HOST:PORT or :PORT, such as :%d: %w", f.endpoints, live.EndpointsPort, err)}
		}
		if err := live.CheckEndpointsListen(f.endpoints, token); err != nil {
			return &exitError{2, fmt.Errorf("--endpoints-listen %w", err)}
		}
	}
	var data []byte
	if f.file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(f.file)
	}
	if err != nil {
		return fmt.Errorf("--experiment: %w", err)
	}
	src := f.source
	if src == "" {
		src = f.file
	}
	exp, err := experiments.Parse(src, data)
	if err != nil {
		return err
	}
	// One instance per target: the coordinator's count, which --backend
	// may have changed from the file's.
	ov := experiments.Overrides{Duration: f.duration, Rate: f.rate, Generators: f.gens, Strategies: []string{f.strategy}, Instances: len(urls)}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "seed" {
			ov.Seed = &f.seed
		}
	})
	if exp, err = exp.Apply(ov); err != nil {
		return err
	}
	return live.Generate(ctx, live.GenerateSpec{
		Exp: exp, Strategy: f.strategy, Targets: urls, Proxy: proxyURL, Upstreams: f.ups,
		Generator: f.gen, Start: at, Raw: f.raw, MaxConnsPerInstance: f.conns,
		EndpointsListen: f.endpoints, Token: token,
	}, stdout, stderr)
}

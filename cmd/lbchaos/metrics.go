package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/metrics"
)

// metricsFlags is lbchaos run's --metrics-listen: the run's live metrics
// over HTTP (docs/metrics.md).
type metricsFlags struct {
	listen string
	// exporter is what the engine feeds, set by start; nil without the flag.
	exporter *metrics.Exporter
}

func (m *metricsFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&m.listen, "metrics-listen", "", "serve the run's live metrics at http://ADDR/metrics in Prometheus' text format while it runs, e.g. 127.0.0.1:9464 (port 0: a free one, logged): requests and latency per strategy and instance, the strategy under way; real engine only (see docs/metrics.md)")
}

// check returns the error of a --metrics-listen given where it cannot
// serve: empty, or with a simulation, whose time is not the clock's.
func (m *metricsFlags) check(fs *flag.FlagSet, engine string) error {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "metrics-listen" })
	switch {
	case !given:
		return nil
	case m.listen == "":
		return errors.New("--metrics-listen: give the address to serve the metrics on, e.g. 127.0.0.1:9464, or leave the flag out")
	case engine == "sim":
		return errors.New("--metrics-listen: a simulation (--engine sim) runs in virtual time, seconds for minutes, so there is nothing live to scrape: leave it out, or run with --engine real")
	}
	return nil
}

// start binds --metrics-listen, when given, before anything of exp runs,
// and serves the metrics until stop; an address that cannot be bound is
// a usage error. The address is logged on logw. stop is never nil.
func (m *metricsFlags) start(exp *experiments.Experiment, logw io.Writer) (stop func(), err error) {
	if m.listen == "" {
		return func() {}, nil
	}
	if exp.Generators > 1 && exp.Protocol != experiments.ProtocolGRPC {
		return nil, &exitError{2, fmt.Errorf("--metrics-listen: a run spread over %d generators measures its requests in the generators' processes, which export nothing live; run with --generators 1", exp.Generators)}
	}
	x := metrics.NewExporter(exp.Timeout)
	srv, err := metrics.Listen(m.listen, x)
	if err != nil {
		return nil, &exitError{2, fmt.Errorf("--metrics-listen %s: %w", m.listen, err)}
	}
	m.exporter = x
	fmt.Fprintf(logw, "lbchaos: live metrics at %s\n", srv.URL())
	return func() { _ = srv.Close() }, nil
}

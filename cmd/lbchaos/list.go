package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/sweep"
)

// listTopics are what lbchaos list lists: experiments by default.
var listTopics = []string{"experiments", "strategies", "sweeps"}

// listTopic returns what lbchaos list's operands ask for.
func listTopic(pos []string) (string, error) {
	switch {
	case len(pos) == 0:
		return "experiments", nil
	case len(pos) == 1 && slices.Contains(listTopics, pos[0]):
		return pos[0], nil
	}
	return "", &exitError{2, fmt.Errorf("list takes no argument (the experiments) or one of %s; got %q", strings.Join(listTopics, ", "), pos)}
}

// listStrategies writes one line per strategy name an experiment may use:
// name, kind and what it does.
func listStrategies(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range experiments.StrategyCatalog() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Kind, s.About)
	}
	return tw.Flush()
}

// strategyWords are the names shell completion offers for --strategies:
// every built-in strategy, also as lbchaos:NAME, every proxy algorithm
// and gRPC balancer; not the wrappers, which follow a base, nor forms with
// a part to fill in.
func strategyWords() []string {
	var words, builtins []string
	for _, s := range experiments.StrategyCatalog() {
		switch {
		case s.Kind == experiments.KindBuiltin:
			builtins = append(builtins, s.Name)
		case s.Kind == experiments.KindWrapper, s.Pattern:
			continue
		}
		words = append(words, s.Name)
	}
	for _, b := range builtins {
		words = append(words, "lbchaos:"+b)
	}
	return words
}

// listSweeps writes one line per shipped sweep: its name, the experiment
// it varies and its description.
func listSweeps(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range experiments.SweepNames() {
		data, source, err := experiments.LoadSweepFile(name)
		if err != nil {
			return err
		}
		f, err := sweep.ParseFile(source, data)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, f.Experiment, f.Description)
	}
	return tw.Flush()
}

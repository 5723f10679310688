package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lbchaos/lbchaos/experiments"
)

// loadExperiment loads a shipped experiment or a file for a command; a
// name that is none, a file that cannot be read and a file with mistakes
// are usage errors (exit status 2), as a bad flag is.
func loadExperiment(ref string) (*experiments.Experiment, error) {
	e, err := experiments.Load(ref)
	if err != nil {
		return nil, &exitError{2, err}
	}
	return e, nil
}

// cmdValidate is lbchaos validate FILE...: each file loaded and checked as
// lbchaos run would, without running. Every problem of every file is
// printed; the exit status is 2 when any file has one.
func cmdValidate(args []string, stdout, stderr io.Writer) error {
	pos, err := parseArgs(newFlagSet("validate"), args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &exitError{2, errors.New("validate: give one or more experiment files (or shipped names), e.g. lbchaos validate my-case.yaml")}
	}
	bad := 0
	for _, ref := range pos {
		e, err := experiments.Load(ref)
		if err != nil {
			bad++
			fmt.Fprintln(stderr, err)
			continue
		}
		for _, w := range e.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		fmt.Fprintf(stdout, "%s: ok (%s: %d strategies, %d instances, %v at %v req/s)\n", ref, e.Name, len(e.Strategies), e.Instances.Count, e.Duration, e.Rate)
		if !e.Instances.Modeled() && !e.Instances.Foreign() {
			fmt.Fprintf(stdout, "%s: no instances.service: it runs only against instances that already run (lbchaos run %s --backend URL, one per instance), not on instances lbchaos starts nor in the simulator\n", ref, ref)
		}
	}
	if bad > 0 {
		return &exitError{2, fmt.Errorf("validate: %d of %d files have problems", bad, len(pos))}
	}
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"github.com/lbchaos/lbchaos/experiments"
)

// flagGroup is a topic of a command's flags in its help, the common
// flags of the command first.
type flagGroup struct {
	title string
	names []string
}

// runFlagGroups orders lbchaos run's flags by topic. A flag in no group
// is listed under "Other" (TestRunHelpGroupsEveryFlag keeps that empty).
var runFlagGroups = []flagGroup{
	{"Load", []string{"duration", "rate", "strategies", "seed", "repeat", "generators"}},
	{"Backends", []string{"backends", "backend", "sidecar", "health-path", "skip-missing", "token", "docker-network"}},
	{"Output", []string{"out", "results", "quiet", "raw", "force", "plots-url", "metrics-listen"}},
	{"Simulation", []string{"engine", "calibrate", "calibrate-pre"}},
	{"Kubernetes (--backends kube)", []string{"kubeconfig", "kube-image", "kube-load", "kube-network", "kube-cpu-request", "kube-generators", "kube-generator-lead"}},
}

// writeFlags writes fs's flags as kubectl and docker print theirs, with
// two dashes: "--name TYPE" and the usage indented below, by groups when
// there are any.
func writeFlags(w io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) == 0 {
		return
	}
	done := map[string]bool{}
	section := func(title string, flags []*flag.Flag) {
		if len(flags) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range flags {
			done[f.Name] = true
			writeFlag(w, f)
		}
	}
	if len(groups) == 0 {
		section("Flags", all)
		return
	}
	for _, g := range groups {
		var flags []*flag.Flag
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				flags = append(flags, f)
			}
		}
		section(g.title+" flags", flags)
	}
	var rest []*flag.Flag
	for _, f := range all {
		if !done[f.Name] {
			rest = append(rest, f)
		}
	}
	section("Other flags", rest)
}

func writeFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	head := "  --" + f.Name
	if typ != "" {
		head += " " + typ
	}
	fmt.Fprintln(w, head)
	if def := f.DefValue; def != "" && def != "0" && def != "false" && !strings.Contains(usage, "(default") {
		usage += fmt.Sprintf(" (default %s)", def)
	}
	for line := range strings.SplitSeq(wrap(usage, 72), "\n") {
		fmt.Fprintln(w, "      "+line)
	}
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	// "invalid value "x" for flag -name: ..." and, for a boolean,
	// "invalid boolean value "x" for -name: ...".
	invalidValue = regexp.MustCompile(`^invalid (?:value "(.*)" for flag|boolean value "(.*)" for) -+([^:]+): `)
)

// flagError rewrites the flag package's parse errors to speak like the
// experiment loader: the flag with two dashes, what it wants with an
// example, the nearest flag for an unknown one.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		s := fmt.Sprintf("unknown flag --%s", m[1])
		if near := experiments.Suggest(m[1], names); near != "" {
			s += fmt.Sprintf("; did you mean --%s?", near)
		}
		return errors.New(s)
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[3]); f != nil {
			return fmt.Errorf("--%s: want %s, got %q", f.Name, wantOf(f), m[1]+m[2])
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		name = strings.TrimLeft(name, "-")
		if f := fs.Lookup(name); f != nil {
			return fmt.Errorf("--%s: needs a value: %s", name, wantOf(f))
		}
	}
	return err
}

// wantOf says what a flag's value is, with an example.
func wantOf(f *flag.Flag) string {
	switch reflect.TypeOf(f.Value).String() {
	case "*flag.durationValue":
		return "a duration like 30s, 500ms or 2m"
	case "*flag.float64Value":
		return "a number like 500"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "a whole number like 3"
	case "*flag.boolValue":
		return "true or false"
	}
	if typ, _ := flag.UnquoteUsage(f); typ != "" {
		return "a " + typ
	}
	return "a value"
}

// unknownCommand is the error for a first argument that is no command,
// with the nearest one.
func unknownCommand(name string) error {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	s := fmt.Sprintf("unknown command %q", name)
	if near := experiments.Suggest(name, names); near != "" {
		s += fmt.Sprintf("; did you mean %q?", near)
	}
	return &exitError{2, errors.New(s + " (lbchaos help lists the commands)")}
}

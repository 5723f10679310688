package netfault

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lbchaos/lbchaos/harness/internal/owner"
)

// SweepStale removes the chains and rules of runs whose owner names a
// process of this host that is gone (a run that was killed), writes a
// line to log for each, and returns how many chains and stray rules it
// removed. What a running process owns, or another host's, is left
// alone, and so is anything without ChainPrefix or Label.
func SweepStale(log io.Writer) (int, error) {
	host, err := os.Hostname()
	if err != nil {
		return 0, fmt.Errorf("netfault: sweep: %w", err)
	}
	return sweep(log, func(string) bool { return false }, func(o string) bool { return owner.Gone(o, host) })
}

// SweepAll removes every chain and rule this package adds, whoever
// added them, as SweepStale does.
func SweepAll(log io.Writer) (int, error) {
	every := func(string) bool { return true }
	return sweep(log, every, every)
}

// Leftovers lists the lines of `iptables -S` that are this package's: its
// chains, the rules in them, and the rules elsewhere that carry Label or
// jump to one of its chains. None are left once every run's Rules are
// closed.
func Leftovers() ([]string, error) {
	out, err := iptables("-S")
	if err != nil {
		return nil, err
	}
	var left []string
	for _, l := range parseList(out) {
		if l.ours() {
			left = append(left, l.text)
		}
	}
	return left, nil
}

// listLine is one line of `iptables -S`.
type listLine struct {
	text  string
	op    string   // "-N", "-A", "-P"
	chain string   // the chain it creates, appends to or sets the policy of
	args  []string // what follows the chain
	// From the rule's arguments: its comment's label fields (run and owner;
	// zero without Label) and the chain it jumps to.
	run, owner, jump string
}

// ours reports whether l is this package's.
func (l listLine) ours() bool {
	return strings.HasPrefix(l.chain, ChainPrefix) || strings.HasPrefix(l.jump, ChainPrefix) || l.run != ""
}

// parseList reads the output of `iptables -S`.
func parseList(out string) []listLine {
	var lines []listLine
	for text := range strings.SplitSeq(out, "\n") {
		text = strings.TrimSpace(text)
		words := splitWords(text)
		if len(words) < 2 {
			continue
		}
		l := listLine{text: text, op: words[0], chain: words[1], args: words[2:]}
		for i := 0; i+1 < len(l.args); i++ {
			switch l.args[i] {
			case "--comment":
				l.run, l.owner = parseComment(l.args[i+1])
			case "-j", "-g":
				l.jump = l.args[i+1]
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// parseComment reads a comment as comment writes it; run is "" when it is
// not one.
func parseComment(c string) (run, owner string) {
	f := strings.Fields(c)
	if len(f) < 3 || f[0] != Label {
		return "", ""
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "run":
			run = v
		case "owner":
			owner = v
		}
	}
	if owner == "" {
		return "", ""
	}
	return run, owner
}

// splitWords splits a line of `iptables -S` into its arguments: blank
// separated, a double-quoted one taken whole (with \" and \\ inside).
func splitWords(s string) []string {
	var (
		words  []string
		cur    strings.Builder
		quoted bool
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted, inWord = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// sweep removes the chains with ChainPrefix for which chainDoomed is true
// or some rule of which (in them, or jumping to them) names an owner for
// which doomed is true, with every rule that jumps to them, and the other
// rules with Label of such owners.
func sweep(log io.Writer, chainDoomed, doomed func(string) bool) (int, error) {
	if log == nil {
		log = io.Discard
	}
	out, err := iptables("-S")
	if err != nil {
		return 0, fmt.Errorf("netfault: sweep: %w", err)
	}
	lines := parseList(out)
	type chainInfo struct {
		run, owner string
		rules      int
		doomed     bool
	}
	chains := map[string]*chainInfo{}
	var order []string
	for _, l := range lines {
		if l.op == "-N" && strings.HasPrefix(l.chain, ChainPrefix) {
			chains[l.chain] = &chainInfo{doomed: chainDoomed(l.chain)}
			order = append(order, l.chain)
		}
	}
	for _, l := range lines {
		if l.op != "-A" {
			continue
		}
		for _, name := range []string{l.chain, l.jump} {
			ch := chains[name]
			if ch == nil {
				continue
			}
			if name == l.chain && l.jump != "" {
				ch.rules++ // a fault's rule; the marker has no target
			}
			if l.run != "" {
				ch.run, ch.owner = l.run, l.owner
				ch.doomed = ch.doomed || doomed(l.owner)
			}
		}
	}
	var errs []error
	n := 0
	// The jumps first: a chain something jumps to cannot be deleted.
	for _, l := range lines {
		if l.op != "-A" || strings.HasPrefix(l.chain, ChainPrefix) {
			continue
		}
		target := chains[l.jump]
		if !(target != nil && target.doomed || l.run != "" && doomed(l.owner)) {
			continue
		}
		_, err := iptables(append([]string{"-D", l.chain}, l.args...)...)
		switch {
		case err != nil && !gone(err):
			errs = append(errs, err)
		case target == nil && err == nil: // a stray rule, no chain of ours
			n++
			fmt.Fprintf(log, "netfault: removed rule %s (run %s, owner %s)\n", l.text, l.run, l.owner)
		}
	}
	for _, name := range order {
		ch := chains[name]
		if !ch.doomed {
			continue
		}
		if err := removeChain(name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		who := "no owner recorded"
		if ch.run != "" {
			who = "run " + ch.run + ", owner " + ch.owner
		}
		fmt.Fprintf(log, "netfault: removed chain %s (%s) with %d rules\n", name, who, ch.rules)
	}
	return n, errors.Join(errs...)
}

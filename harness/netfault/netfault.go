// Package netfault carries out network faults (faultyserver.NetworkFault:
// loss, syn-drop) with the kernel's packet filter: iptables rules that drop
// an instance's packets on its loopback port, so that TCP loses them and
// retransmits as it would on a lossy link.
//
// A run's rules live in a chain of their own, ChainPrefix and the run's
// id, which the first rule of INPUT jumps to; every rule carries a comment
// with Label, the run id and the owner string of the process
// (harness/internal/owner), so that SweepStale can remove what a killed
// process left, and SweepAll what any process left. Adding rules needs
// root (Available).
package netfault

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// Rules are one run's packet filter rules: its chain, the jump to it from
// INPUT, and the faults applied by key. Create them with New and Close
// them when the run ends. Its methods are safe for concurrent use.
type Rules struct {
	// Immutable after New.
	run, owner, chain string
	jump              []string // the INPUT rule's arguments

	mu     sync.Mutex
	keys   map[string][][]string // each applied fault's rules, as -A took them
	closed bool
}

// New creates run runID's chain, marked as owner's (owner.Self), and
// makes INPUT jump to it first. It refuses, with Available's reason, when
// this process cannot change the packet filter, and when the chain exists
// (another run whose id starts alike).
func New(runID, owner string) (*Rules, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	if err := checkWord("owner", owner); err != nil {
		return nil, err
	}
	if n := len(comment(runID, owner, "")); n > maxComment-64 {
		return nil, fmt.Errorf("run id and owner: %d characters, too long for an iptables comment", n)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	c := comment(runID, owner, "")
	r := &Rules{run: runID, owner: owner, chain: chainName(runID), keys: map[string][][]string{}}
	r.jump = jumpArgs(r.chain, c)
	if _, err := iptables("-N", r.chain); err != nil {
		return nil, err
	}
	if _, err := iptables(append([]string{"-A", r.chain}, markerArgs(c)...)...); err != nil {
		return nil, errors.Join(err, removeChain(r.chain))
	}
	if _, err := iptables(append([]string{"-I", "INPUT", "1"}, r.jump...)...); err != nil {
		// The insertion may have happened all the same (a call that timed
		// out): the chain cannot go while INPUT jumps to it.
		return nil, errors.Join(err, r.deleteJump(), removeChain(r.chain))
	}
	return r, nil
}

// Chain returns the name of the run's chain.
func (r *Rules) Chain() string { return r.chain }

// Apply adds the rules that carry out f on t, under key (say, the
// instance's), which Remove takes back. A key already applied must be
// removed first. On error no rule of f is left, unless taking back those
// added fails too: those stay under key, for Remove to try again (and
// Close removes them with the chain).
func (r *Rules) Apply(key string, f faultyserver.NetworkFault, t Target) error {
	if err := checkWord("key", key); err != nil {
		return err
	}
	c := comment(r.run, r.owner, key)
	if len(c) > maxComment {
		return fmt.Errorf("key %q: too long for an iptables comment", key)
	}
	rules, err := ruleArgs(f, t, c)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("%s: closed", r.chain)
	case r.keys[key] != nil:
		return fmt.Errorf("key %q: a fault is applied under it already", key)
	}
	for i, args := range rules {
		if _, err := iptables(append([]string{"-A", r.chain}, args...)...); err != nil {
			left, derr := r.delete(rules[:i])
			if len(left) > 0 {
				r.keys[key] = left
			}
			return errors.Join(err, derr)
		}
	}
	r.keys[key] = rules
	return nil
}

// Remove deletes the rules applied under key; nothing when there are none.
// Those it fails to delete stay under key, for another Remove to try
// again (and for Close, which removes them with the chain).
func (r *Rules) Remove(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	left, err := r.delete(r.keys[key])
	if len(left) > 0 {
		r.keys[key] = left
	} else {
		delete(r.keys, key)
	}
	return err
}

// Keys returns the keys applied, sorted.
func (r *Rules) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.keys))
	for k := range r.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// delete deletes rules from the chain and returns those it could not
// delete; a rule already gone is not an error.
func (r *Rules) delete(rules [][]string) (left [][]string, err error) {
	var errs []error
	for _, args := range rules {
		if _, err := iptables(append([]string{"-D", r.chain}, args...)...); err != nil && !gone(err) {
			errs = append(errs, err)
			left = append(left, args)
		}
	}
	return left, errors.Join(errs...)
}

// deleteJump deletes INPUT's jump to the chain; one already gone is not
// an error.
func (r *Rules) deleteJump() error {
	if _, err := iptables(append([]string{"-D", "INPUT"}, r.jump...)...); err != nil && !gone(err) {
		return err
	}
	return nil
}

// Close removes the jump from INPUT and the chain with every rule in it.
// It is idempotent, and what is gone already (a sweep, lbchaos clean) is
// not an error.
func (r *Rules) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.keys = nil
	return errors.Join(r.deleteJump(), removeChain(r.chain))
}

// removeChain flushes and deletes chain; one already gone is not an error.
func removeChain(chain string) error {
	if _, err := iptables("-F", chain); err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	if _, err := iptables("-X", chain); err != nil && !gone(err) {
		return err
	}
	return nil
}

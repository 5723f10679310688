package netfault

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// The text of the rules: pure functions of a run, a fault and a target,
// which the tests read as they are.

// Names and marks of what this package adds to the filter table. Every
// chain's name starts with ChainPrefix and every rule's comment with
// Label; the sweeps act on nothing else.
const (
	ChainPrefix = "LBCHAOS-"
	Label       = "lbchaos"
	// maxChain is the longest chain name iptables takes.
	maxChain = 28
	// maxComment is the longest comment the comment match takes.
	maxComment = 256
)

// Target is where a network fault acts: an instance's TCP port on a
// loopback address of this host, and optionally the peers whose traffic
// with it is dropped. On loopback both directions of a connection pass
// the INPUT chain, where the rules are: a packet dropped there is lost as
// on a wire, so the sender sees no error and TCP retransmits.
type Target struct {
	// Addr is the instance's address, in 127.0.0.0/8.
	Addr netip.Addr
	// Port is the instance's TCP port.
	Port uint16
	// Sources, when set, limits the drops to the traffic between the
	// instance and these addresses (each in 127.0.0.0/8; say, the
	// addresses one zone's clients bind), leaving every other peer's
	// alone. Empty: every peer.
	Sources []netip.Addr
}

// TargetOf is the target of an instance reached at base, whose host must
// be an IPv4 loopback address (127.0.0.1): a port of this host's network
// namespace.
func TargetOf(base *url.URL) (Target, error) {
	if base == nil {
		return Target{}, fmt.Errorf("the instance has no address")
	}
	host, portText, err := net.SplitHostPort(base.Host)
	if err != nil {
		return Target{}, fmt.Errorf("address %s: %v", base.Host, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return Target{}, fmt.Errorf("address %s: the host is not an IP address of this host's loopback", base.Host)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return Target{}, fmt.Errorf("address %s: bad port %q", base.Host, portText)
	}
	t := Target{Addr: addr.Unmap(), Port: uint16(port)}
	return t, t.validate()
}

// String writes t as "127.0.0.1:8080" or "127.0.0.1:8080 from 127.0.0.2, 127.0.0.3".
func (t Target) String() string {
	s := netip.AddrPortFrom(t.Addr, t.Port).String()
	if len(t.Sources) > 0 {
		src := make([]string, len(t.Sources))
		for i, a := range t.Sources {
			src[i] = a.String()
		}
		s += " from " + strings.Join(src, ", ")
	}
	return s
}

func (t Target) validate() error {
	if !loopback4(t.Addr) {
		return fmt.Errorf("address %v: not an IPv4 loopback address (127.0.0.0/8), where the rules see both directions of a connection", t.Addr)
	}
	if t.Port == 0 {
		return fmt.Errorf("address %v: no port", t.Addr)
	}
	for _, s := range t.Sources {
		if !loopback4(s) {
			return fmt.Errorf("source %v: not an IPv4 loopback address (127.0.0.0/8)", s)
		}
	}
	return nil
}

func loopback4(a netip.Addr) bool { return a.Is4() && a.IsLoopback() }

// chainName is the chain of run runID: ChainPrefix and the run id's
// first 8 characters.
func chainName(runID string) string {
	return ChainPrefix + runID[:min(len(runID), 8)]
}

// comment is the comment of every rule of run runID made by owner; key,
// when set, names the fault the rule carries out (Rules.Apply).
func comment(runID, owner, key string) string {
	c := Label + " run=" + runID + " owner=" + owner
	if key != "" {
		c += " key=" + key
	}
	return c
}

// checkWord checks a run id, owner or key, which a comment holds between
// blanks: printable, without blanks or quotes.
func checkWord(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", what)
	}
	for _, r := range s {
		if r <= ' ' || r > '~' || r == '"' || r == '\'' || r == '\\' {
			return fmt.Errorf("%s %q: only printable ASCII without blanks or quotes", what, s)
		}
	}
	return nil
}

// checkRunID checks a run id, which names the chain as well.
func checkRunID(runID string) error {
	if err := checkWord("run id", runID); err != nil {
		return err
	}
	for _, r := range runID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("run id %q: only letters, digits, _ and -, which a chain name takes", runID)
		}
	}
	if n := len(chainName(runID)); n > maxChain {
		return fmt.Errorf("run id %q: chain name of %d characters, more than iptables takes (%d)", runID, n, maxChain)
	}
	return nil
}

// Dropper is a network fault that says which packets to drop.
// faultyserver's loss and syn-drop are.
type Dropper interface {
	faultyserver.NetworkFault
	Drops() []faultyserver.Drop
}

// ruleArgs are the rules that carry out f on t, each as the arguments
// that follow `-A CHAIN`, each marked with comment c: one rule per drop of
// f and per source of t (one when t has none).
func ruleArgs(f faultyserver.NetworkFault, t Target, c string) ([][]string, error) {
	d, ok := f.(Dropper)
	if !ok {
		return nil, fmt.Errorf("mode %q: says no packets to drop", f.Mode())
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	peers := t.Sources
	if len(peers) == 0 {
		peers = []netip.Addr{{}} // every peer
	}
	var rules [][]string
	for _, drop := range d.Drops() {
		if !(drop.P > 0 && drop.P <= 1) {
			return nil, fmt.Errorf("mode %q: drop probability %v outside (0,1]", f.Mode(), drop.P)
		}
		for _, peer := range peers {
			rules = append(rules, dropArgs(drop, t, peer, c))
		}
	}
	return rules, nil
}

// dropArgs is the rule of one drop between t and peer (the zero Addr:
// every peer).
func dropArgs(d faultyserver.Drop, t Target, peer netip.Addr, c string) []string {
	addr, port := t.Addr.String(), strconv.Itoa(int(t.Port))
	var args []string
	switch d.Dir {
	case faultyserver.ToInstance:
		args = []string{"-p", "tcp", "-d", addr, "--dport", port}
		if peer.IsValid() {
			args = append(args, "-s", peer.String())
		}
	default: // FromInstance
		args = []string{"-p", "tcp", "-s", addr, "--sport", port}
		if peer.IsValid() {
			args = append(args, "-d", peer.String())
		}
	}
	if d.SYN {
		args = append(args, "--syn")
	}
	if d.P < 1 {
		args = append(args, "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(d.P, 'g', -1, 64))
	}
	return append(args, "-m", "comment", "--comment", c, "-j", "DROP")
}

// markerArgs is the first rule of a run's chain: it matches every packet
// and does nothing, and its comment tells a sweep whose chain it is even
// when no fault is applied.
func markerArgs(c string) []string {
	return []string{"-m", "comment", "--comment", c}
}

// jumpArgs is the rule of INPUT that sends every packet through chain.
func jumpArgs(chain, c string) []string {
	return []string{"-m", "comment", "--comment", c, "-j", chain}
}

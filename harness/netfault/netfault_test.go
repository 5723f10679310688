package netfault

// These tests change this host's packet filter for real: they need root
// and iptables, and skip without them. Each works on its own chain and
// checks only what its own run id left, so they may run beside other
// tests and runs that use the filter.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
)

// needFilter skips t unless this process can change the packet filter.
func needFilter(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("packet filter tests: loss %v", err)
	}
}

// newRules creates rules of a fresh run owned by who ("" is this process)
// and closes them when t ends.
func newRules(t *testing.T, who string) *Rules {
	t.Helper()
	run, err := owner.RunID("")
	if err != nil {
		t.Fatal(err)
	}
	if who == "" {
		if who, err = owner.Self(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(run, who)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// leftoversOf lists what Leftovers finds of r's run.
func leftoversOf(t *testing.T, r *Rules) []string {
	t.Helper()
	all, err := Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, l := range all {
		if strings.Contains(l, r.Chain()) || strings.Contains(l, "run="+r.run+" ") {
			mine = append(mine, l)
		}
	}
	return mine
}

// inputJumpsTo reports whether `iptables -S INPUT`, read here without the
// package, has a rule that jumps to chain.
func inputJumpsTo(t *testing.T, chain string) bool {
	t.Helper()
	out, err := exec.Command("iptables", "-w", "-S", "INPUT").Output()
	if err != nil {
		t.Fatalf("iptables -S INPUT: %v", err)
	}
	return strings.Contains(string(out), "-j "+chain)
}

// server is a real HTTP server on 127.0.0.1 that answers at once, and its
// target.
func server(t *testing.T) (*httptest.Server, Target) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	target, err := TargetOf(u)
	if err != nil {
		t.Fatal(err)
	}
	return srv, target
}

// getAll sends n GETs at once through c and returns how long each took.
func getAll(t *testing.T, c *http.Client, u string, n int) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			t0 := time.Now()
			resp, err := c.Get(u)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			took[i], errs[i] = time.Since(t0), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return took
}

// Dropped packets are retransmitted by TCP after its retransmission
// timeout, at least 200 ms: some requests are that late, none fails.
func TestLossDelaysRequestsByARetransmission(t *testing.T) {
	needFilter(t)
	srv, target := server(t)
	const n = 32
	c := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n},
		Timeout:   10 * time.Second,
	}
	defer c.CloseIdleConnections()
	getAll(t, c, srv.URL, n) // the connections open before the loss: no SYN is lost
	r := newRules(t, "")
	// Each request has about 2 packets a loss delays (the request and its
	// answer): with p=0.2, a third of the requests are late, and a packet
	// lost 6 times over (a 12.6 s wait, past the client's timeout) comes
	// once in 15000.
	if err := r.Apply("instance-0", faultyserver.Loss{P: 0.2}, target); err != nil {
		t.Fatal(err)
	}
	late := 0
	took := getAll(t, c, srv.URL, n)
	for _, d := range took {
		if d >= 200*time.Millisecond {
			late++
		}
	}
	t.Logf("under loss p=0.2: %d of %d requests took 200 ms or more: %v", late, len(took), took)
	if late == 0 {
		t.Errorf("no request of %d took 200 ms or more under loss p=0.2", len(took))
	}
	if err := r.Remove("instance-0"); err != nil {
		t.Fatal(err)
	}
	for _, l := range leftoversOf(t, r) {
		if strings.Contains(l, "key=instance-0") {
			t.Errorf("after Remove, a rule of the fault is left: %s", l)
		}
	}
}

// A dropped SYN makes a connection attempt time out, as to a host that
// does not answer; connections already open go on.
func TestSynDropTimesOutConnects(t *testing.T) {
	needFilter(t)
	srv, target := server(t)
	addr := hostPort(target)
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	r := newRules(t, "")
	if err := r.Apply("instance-0", faultyserver.SynDrop{P: 1}, target); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	var ne net.Error
	if err == nil {
		conn.Close()
		t.Fatal("a dial went through a dropped SYN")
	}
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("dial under syn-drop: %v, want a timeout", err)
	}
	if took := time.Since(t0); took < 250*time.Millisecond {
		t.Errorf("dial failed after %v, before its timeout: %v", took, err)
	}
	// The open connection still carries a request.
	fmt.Fprintf(open, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(open)
	if err != nil || !bytes.HasPrefix(answer, []byte("HTTP/1.1 200")) {
		t.Errorf("request on a connection opened before: %q, %v", answer, err)
	}
	if err := r.Remove("instance-0"); err != nil {
		t.Fatal(err)
	}
	conn, err = net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial after the fault was removed: %v", err)
	}
	conn.Close()
	_ = srv
}

// hostPort writes t's address as a dial takes it.
func hostPort(t Target) string { return net.JoinHostPort(t.Addr.String(), fmt.Sprint(t.Port)) }

// Close removes the jump from INPUT and the chain with its rules, even
// with faults applied.
func TestCloseLeavesNothing(t *testing.T) {
	needFilter(t)
	_, target := server(t)
	r := newRules(t, "")
	if !inputJumpsTo(t, r.Chain()) {
		t.Fatalf("INPUT does not jump to %s after New", r.Chain())
	}
	if err := r.Apply("a", faultyserver.Loss{P: 0.01}, target); err != nil {
		t.Fatal(err)
	}
	zone := target
	zone.Sources = []netip.Addr{mustAddr("127.0.0.2"), mustAddr("127.0.0.3")}
	if err := r.Apply("b", faultyserver.SynDrop{P: 0.5}, zone); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply("a", faultyserver.Loss{P: 0.01}, target); err == nil {
		t.Error("Apply took a key already applied")
	}
	// 1 jump, the chain, its marker, 2 rules of a and 2 of b.
	if left := leftoversOf(t, r); len(left) != 7 {
		t.Errorf("with two faults applied, %d lines of the run, want 7:\n%s", len(left), strings.Join(left, "\n"))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftoversOf(t, r); len(left) > 0 {
		t.Errorf("after Close, iptables -S still has:\n%s", strings.Join(left, "\n"))
	}
	if inputJumpsTo(t, r.Chain()) {
		t.Errorf("after Close, INPUT still jumps to %s", r.Chain())
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := r.Apply("c", faultyserver.Loss{P: 0.01}, target); err == nil {
		t.Error("Apply after Close took a fault")
	}
}

// A zone's rules drop only the traffic of its sources: a client bound to
// another loopback address connects as usual.
func TestSourcesLimitTheDrops(t *testing.T) {
	needFilter(t)
	_, target := server(t)
	zone := target
	zone.Sources = []netip.Addr{mustAddr("127.0.0.2")}
	r := newRules(t, "")
	if err := r.Apply("zone-a", faultyserver.SynDrop{P: 1}, zone); err != nil {
		t.Fatal(err)
	}
	dial := func(from string) error {
		d := net.Dialer{Timeout: 300 * time.Millisecond, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.DialContext(context.Background(), "tcp", hostPort(target))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial("127.0.0.2"); err == nil {
		t.Error("a client in the zone connected through a dropped SYN")
	}
	if err := dial("127.0.0.3"); err != nil {
		t.Errorf("a client outside the zone: %v", err)
	}
}

// SweepStale removes the chain and jump of a run whose process is gone,
// and leaves those of a live one, of another host's and a chain with no
// owner recorded. The sweep's selection, scoped here to what the test
// made so as to leave other runs alone, removes by owner the chain, its
// rules and the jump, and with SweepAll's scope a chain with no owner.
// Other processes may sweep the dead owner's chain first (a run's start
// does): the test then finds it gone all the same.
func TestSweepStale(t *testing.T) {
	needFilter(t)
	_, target := server(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead := newRules(t, owner.Format(host, exited.Process.Pid, "1"))
	live := newRules(t, "")
	foreign := newRules(t, owner.Format("elsewhere-"+host, exited.Process.Pid, "1"))
	for _, r := range []*Rules{dead, live, foreign} {
		if err := r.Apply("instance-0", faultyserver.Loss{P: 0.01}, target); err != nil {
			t.Fatal(err)
		}
	}
	orphan := ChainPrefix + "t" + dead.run[:7]
	if _, err := iptables("-N", orphan); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeChain(orphan) })

	var log bytes.Buffer
	n, err := SweepStale(&log)
	if err != nil {
		t.Fatalf("SweepStale: %v\n%s", err, log.String())
	}
	t.Logf("SweepStale removed %d:\n%s", n, log.String())
	if !strings.Contains(log.String(), "removed chain "+dead.Chain()) {
		t.Logf("SweepStale did not remove %s: another process's sweep did first", dead.Chain())
	}
	if left := leftoversOf(t, dead); len(left) > 0 {
		t.Errorf("the dead owner's rules are left:\n%s", strings.Join(left, "\n"))
	}
	if inputJumpsTo(t, dead.Chain()) {
		t.Errorf("INPUT still jumps to the dead owner's %s", dead.Chain())
	}
	// The jump, the chain, its marker and the fault's 2 rules.
	for _, r := range []*Rules{live, foreign} {
		if left := leftoversOf(t, r); len(left) != 5 {
			t.Errorf("owner %s lost rules: %d left:\n%s", r.owner, len(left), strings.Join(left, "\n"))
		}
	}
	if !chainExists(t, orphan) {
		t.Errorf("SweepStale removed %s, whose owner it cannot know", orphan)
	}

	log.Reset()
	if n, err := sweep(&log, func(string) bool { return false }, func(o string) bool { return o == foreign.owner }); err != nil || n != 1 {
		t.Fatalf("sweep of one owner: %d removed, %v", n, err)
	}
	want := fmt.Sprintf("netfault: removed chain %s (run %s, owner %s) with 2 rules\n", foreign.Chain(), foreign.run, foreign.owner)
	if log.String() != want {
		t.Errorf("sweep log %q, want %q", log.String(), want)
	}
	if left := leftoversOf(t, foreign); len(left) > 0 || inputJumpsTo(t, foreign.Chain()) {
		t.Errorf("the swept owner's rules are left:\n%s", strings.Join(left, "\n"))
	}

	log.Reset()
	only := func(chain string) bool { return chain == orphan }
	if _, err := sweep(&log, only, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if chainExists(t, orphan) {
		t.Errorf("the sweep of every chain left %s:\n%s", orphan, log.String())
	}
	if !strings.Contains(log.String(), "removed chain "+orphan+" (no owner recorded)") {
		t.Errorf("sweep log: %s", log.String())
	}
	if err := dead.Close(); err != nil {
		t.Errorf("Close after a sweep removed the chain: %v", err)
	}
}

func chainExists(t *testing.T, chain string) bool {
	t.Helper()
	_, err := iptables("-S", chain)
	return err == nil
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

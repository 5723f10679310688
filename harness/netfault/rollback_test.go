package netfault

// These tests run a fake iptables, first on PATH, that logs its calls and
// fails those they choose: they check what the package does when a call
// fails, which the real packet filter cannot be made to do.

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// fakeFilter is a fake iptables in a directory of its own.
type fakeFilter struct{ dir string }

// fakeScript logs its arguments but the first (-w), one call a line, and
// fails the calls that contain a line's pattern of its fail file
// ("pattern" or "pattern|what it says").
const fakeScript = `#!/bin/sh
shift
echo "$*" >> "DIR/calls"
[ -f "DIR/fail" ] || exit 0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	pat=${line%%|*}
	msg=${line#*|}
	[ "$msg" = "$line" ] && msg="iptables: fake failure."
	case "$*" in
	*"$pat"*) echo "$msg" >&2; exit 1 ;;
	esac
done < "DIR/fail"
exit 0
`

// fakeIPTables puts a fake iptables first on PATH until t ends.
func fakeIPTables(t *testing.T) *fakeFilter {
	t.Helper()
	dir := t.TempDir()
	script := strings.ReplaceAll(fakeScript, "DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, "iptables"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &fakeFilter{dir}
}

// failOn makes the calls that contain one of patterns fail from now on
// (none: every call succeeds).
func (f *fakeFilter) failOn(t *testing.T, patterns ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "fail"), []byte(strings.Join(patterns, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// calls returns the calls made since the last, as their arguments but
// -w, and forgets them.
func (f *fakeFilter) calls(t *testing.T) []string {
	t.Helper()
	name := filepath.Join(f.dir, "calls")
	b, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// ops returns each call's first two arguments: "-D INPUT".
func ops(calls []string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		f := strings.Fields(c)
		out[i] = strings.Join(f[:min(2, len(f))], " ")
	}
	return out
}

// fakeRules are the rules of a run, made as New makes them but without a
// call, so that only the calls of the test show.
func fakeRules() *Rules {
	r := &Rules{run: "fakerun", owner: "host/1/2", chain: chainName("fakerun"), keys: map[string][][]string{}}
	r.jump = jumpArgs(r.chain, comment(r.run, r.owner, ""))
	return r
}

const gonePattern = "iptables: Bad rule (does a matching rule exist in that chain?)."

func TestNewTakesBackAFailedJump(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("New refuses to run without root, even with a fake iptables")
	}
	f := fakeIPTables(t)
	const chain = ChainPrefix + "fakerun"
	for _, gone := range []bool{false, true} {
		fail := []string{"-I INPUT"}
		if gone {
			fail = append(fail, "-D INPUT|"+gonePattern)
		}
		f.failOn(t, fail...)
		_, err := New("fakerun", "host/1/2")
		if err == nil || !strings.Contains(err.Error(), "fake failure") || strings.Contains(err.Error(), "Bad rule") {
			t.Fatalf("New with a failing jump: %v; want the jump's error alone", err)
		}
		calls := f.calls(t)
		want := []string{"-S INPUT", "-N " + chain, "-A " + chain, "-I INPUT", "-D INPUT", "-F " + chain, "-X " + chain}
		if got := ops(calls); !slices.Equal(got, want) {
			t.Fatalf("calls:\n%s\nwant their ops %q", strings.Join(calls, "\n"), want)
		}
		if ins, del := strings.Replace(calls[3], "-I INPUT 1 ", "", 1), strings.Replace(calls[4], "-D INPUT ", "", 1); ins != del {
			t.Errorf("deleted jump %q, inserted %q", del, ins)
		}
	}
}

// lossAt is a loss fault's target: two rules, one each way.
var lossAt = Target{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}

func TestRemoveKeepsWhatItCouldNotDelete(t *testing.T) {
	f := fakeIPTables(t)
	r := fakeRules()
	if err := r.Apply("instance-0", faultyserver.Loss{P: 0.5}, lossAt); err != nil {
		t.Fatal(err)
	}
	added := f.calls(t)
	if got := ops(added); !slices.Equal(got, []string{"-A " + r.chain, "-A " + r.chain}) {
		t.Fatalf("Apply: calls %q", added)
	}

	f.failOn(t, "-D "+r.chain+" -p tcp -d 127.0.0.1")
	if err := r.Remove("instance-0"); err == nil {
		t.Fatal("Remove with a failing delete: no error")
	}
	if got := ops(f.calls(t)); !slices.Equal(got, []string{"-D " + r.chain, "-D " + r.chain}) {
		t.Fatalf("Remove: calls %q, want both rules deleted", got)
	}
	if got := r.Keys(); !slices.Equal(got, []string{"instance-0"}) {
		t.Fatalf("after a failed Remove, keys %q; want the key kept", got)
	}
	if err := r.Apply("instance-0", faultyserver.Loss{P: 0.5}, lossAt); err == nil {
		t.Error("Apply on a key whose rules are not all removed: no error")
	}
	f.calls(t)

	f.failOn(t)
	if err := r.Remove("instance-0"); err != nil {
		t.Fatal(err)
	}
	calls := f.calls(t)
	if want := "-D " + strings.TrimPrefix(added[0], "-A "); !slices.Equal(calls, []string{want}) {
		t.Fatalf("Remove again: calls %q, want only the rule left: %q", calls, want)
	}
	if got := r.Keys(); len(got) != 0 {
		t.Fatalf("after Remove, keys %q", got)
	}
}

func TestApplyTakesBackWhatItAdded(t *testing.T) {
	f := fakeIPTables(t)
	r := fakeRules()
	f.failOn(t, "--sport")
	if err := r.Apply("instance-0", faultyserver.Loss{P: 0.5}, lossAt); err == nil {
		t.Fatal("Apply with a failing rule: no error")
	}
	calls := f.calls(t)
	if got := ops(calls); !slices.Equal(got, []string{"-A " + r.chain, "-A " + r.chain, "-D " + r.chain}) ||
		strings.TrimPrefix(calls[0], "-A ") != strings.TrimPrefix(calls[2], "-D ") {
		t.Fatalf("calls %q; want the first rule added, the second failing, the first deleted", calls)
	}
	if got := r.Keys(); len(got) != 0 {
		t.Fatalf("keys %q after a rolled back Apply", got)
	}

	// The rollback fails too: what is left stays under the key.
	f.failOn(t, "--sport", "-D ")
	if err := r.Apply("instance-0", faultyserver.Loss{P: 0.5}, lossAt); err == nil {
		t.Fatal("Apply with a failing rule: no error")
	}
	first := strings.TrimPrefix(f.calls(t)[0], "-A ")
	if got := r.Keys(); !slices.Equal(got, []string{"instance-0"}) {
		t.Fatalf("keys %q after a failed rollback; want the key kept", got)
	}
	f.failOn(t)
	if err := r.Remove("instance-0"); err != nil {
		t.Fatal(err)
	}
	if calls := f.calls(t); !slices.Equal(calls, []string{"-D " + first}) {
		t.Fatalf("Remove: calls %q, want %q", calls, "-D "+first)
	}
}

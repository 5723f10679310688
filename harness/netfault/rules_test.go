package netfault

import (
	"math/rand/v2"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/faultyserver"
)

const testComment = "lbchaos run=0123456789abcdef owner=host/42/777 key=instance-1"

func TestRuleArgs(t *testing.T) {
	at8080 := Target{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}
	zone := at8080
	zone.Sources = []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	tail := []string{"-m", "comment", "--comment", testComment, "-j", "DROP"}
	stat := func(p string) []string { return []string{"-m", "statistic", "--mode", "random", "--probability", p} }
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	in := []string{"-p", "tcp", "-d", "127.0.0.1", "--dport", "8080"}
	out := []string{"-p", "tcp", "-s", "127.0.0.1", "--sport", "8080"}
	tests := []struct {
		name  string
		fault faultyserver.NetworkFault
		at    Target
		want  [][]string
	}{
		{"loss both directions", faultyserver.Loss{P: 0.05}, at8080, [][]string{
			join(in, stat("0.05"), tail),
			join(out, stat("0.05"), tail),
		}},
		{"loss of every packet has no statistic", faultyserver.Loss{P: 1}, at8080, [][]string{
			join(in, tail),
			join(out, tail),
		}},
		{"syn-drop of every SYN", faultyserver.SynDrop{P: 1}, at8080, [][]string{
			join(in, []string{"--syn"}, tail),
		}},
		{"syn-drop of some SYNs", faultyserver.SynDrop{P: 0.25}, at8080, [][]string{
			join(in, []string{"--syn"}, stat("0.25"), tail),
		}},
		{"loss between a zone's sources and the instance", faultyserver.Loss{P: 0.5}, zone, [][]string{
			join(in, []string{"-s", "127.0.0.2"}, stat("0.5"), tail),
			join(in, []string{"-s", "127.0.0.3"}, stat("0.5"), tail),
			join(out, []string{"-d", "127.0.0.2"}, stat("0.5"), tail),
			join(out, []string{"-d", "127.0.0.3"}, stat("0.5"), tail),
		}},
		{"syn-drop from a zone", faultyserver.SynDrop{P: 1}, Target{Addr: netip.MustParseAddr("127.0.0.9"), Port: 9, Sources: zone.Sources[:1]}, [][]string{
			join([]string{"-p", "tcp", "-d", "127.0.0.9", "--dport", "9", "-s", "127.0.0.2", "--syn"}, tail),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ruleArgs(tt.fault, tt.at, testComment)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

// noDrops is a network fault that names no packets.
type noDrops struct {
	faultyserver.NetworkLevel
	faultyserver.Health
}

func (noDrops) Mode() string    { return "mute" }
func (noDrops) Validate() error { return nil }
func (noDrops) Plan(base time.Duration, _ *rand.Rand) faultyserver.Action {
	return faultyserver.Action{Kind: faultyserver.ActionServe, Service: base}
}

func TestRuleArgsRefuses(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name  string
		fault faultyserver.NetworkFault
		at    Target
		want  string
	}{
		{"another host's address", faultyserver.Loss{P: 0.1}, Target{Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}, "address 10.0.0.1: not an IPv4 loopback address"},
		{"IPv6 loopback", faultyserver.Loss{P: 0.1}, Target{Addr: netip.MustParseAddr("::1"), Port: 80}, "address ::1: not an IPv4 loopback address"},
		{"no address", faultyserver.Loss{P: 0.1}, Target{Port: 80}, "not an IPv4 loopback address"},
		{"no port", faultyserver.Loss{P: 0.1}, Target{Addr: lo}, "address 127.0.0.1: no port"},
		{"a source elsewhere", faultyserver.Loss{P: 0.1}, Target{Addr: lo, Port: 80, Sources: []netip.Addr{netip.MustParseAddr("192.168.1.2")}}, "source 192.168.1.2: not an IPv4 loopback address"},
		{"a fault without drops", noDrops{}, Target{Addr: lo, Port: 80}, `mode "mute": says no packets to drop`},
		{"a probability out of range", faultyserver.Loss{P: 2}, Target{Addr: lo, Port: 80}, `mode "loss": drop probability 2 outside (0,1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ruleArgs(tt.fault, tt.at, testComment)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ruleArgs = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestTargetOf(t *testing.T) {
	tests := []struct {
		url  string
		want Target
		err  string
	}{
		{url: "http://127.0.0.1:8080", want: Target{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}},
		{url: "http://127.0.0.5:31000/base", want: Target{Addr: netip.MustParseAddr("127.0.0.5"), Port: 31000}},
		{url: "http://localhost:8080", err: "the host is not an IP address"},
		{url: "http://10.1.2.3:8080", err: "not an IPv4 loopback address"},
		{url: "http://[::1]:8080", err: "not an IPv4 loopback address"},
		{url: "http://127.0.0.1", err: "missing port"},
		{url: "http://127.0.0.1:0", err: `bad port "0"`},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TargetOf(u)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("TargetOf(%s) = %v, %v; want an error with %q", tt.url, got, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("TargetOf(%s): %v", tt.url, err)
		case tt.err == "" && !cmp.Equal(got, tt.want, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })):
			t.Errorf("TargetOf(%s) = %v, want %v", tt.url, got, tt.want)
		}
	}
	if _, err := TargetOf(nil); err == nil {
		t.Error("TargetOf(nil) took no address")
	}
}

func TestChainAndComment(t *testing.T) {
	if got := chainName("0123456789abcdef"); got != "LBCHAOS-01234567" {
		t.Errorf("chainName = %q", got)
	}
	if got := chainName("ab"); got != "LBCHAOS-ab" {
		t.Errorf("chainName of a short id = %q", got)
	}
	for _, bad := range []string{"", "a b", "x;y", `q"`, "dots.are.out"} {
		if err := checkRunID(bad); err == nil {
			t.Errorf("checkRunID(%q) took it", bad)
		}
	}
	if err := checkRunID("0123456789abcdef"); err != nil {
		t.Errorf("checkRunID: %v", err)
	}
	c := comment("0123456789abcdef", "host/42/777", "instance-1")
	if c != testComment {
		t.Errorf("comment = %q, want %q", c, testComment)
	}
	run, who := parseComment(c)
	if run != "0123456789abcdef" || who != "host/42/777" {
		t.Errorf("parseComment(%q) = %q, %q", c, run, who)
	}
	for _, other := range []string{"", "docker rule", "lbchaos", "lbchaos run=x"} {
		if run, _ := parseComment(other); run != "" {
			t.Errorf("parseComment(%q) read run %q", other, run)
		}
	}
}

// The output of `iptables -S` as iptables 1.8 (nf_tables) writes it.
const sampleList = `-P INPUT ACCEPT
-P FORWARD DROP
-N DOCKER
-N LBCHAOS-01234567
-A INPUT -m comment --comment "lbchaos run=0123456789abcdef owner=host/42/777" -j LBCHAOS-01234567
-A INPUT -i docker0 -j ACCEPT
-A FORWARD -j DOCKER
-A LBCHAOS-01234567 -m comment --comment "lbchaos run=0123456789abcdef owner=host/42/777"
-A LBCHAOS-01234567 -d 127.0.0.1/32 -p tcp -m tcp --dport 8080 -m statistic --mode random --probability 0.04999999981 -m comment --comment "lbchaos run=0123456789abcdef owner=host/42/777 key=instance-1" -j DROP
-A DOCKER -m comment --comment "say \"hi\"" -j RETURN
`

func TestParseList(t *testing.T) {
	lines := parseList(sampleList)
	var ours []string
	for _, l := range lines {
		if l.ours() {
			ours = append(ours, l.op+" "+l.chain+" jump="+l.jump+" run="+l.run+" owner="+l.owner)
		}
	}
	want := []string{
		"-N LBCHAOS-01234567 jump= run= owner=",
		"-A INPUT jump=LBCHAOS-01234567 run=0123456789abcdef owner=host/42/777",
		"-A LBCHAOS-01234567 jump= run=0123456789abcdef owner=host/42/777",
		"-A LBCHAOS-01234567 jump=DROP run=0123456789abcdef owner=host/42/777",
	}
	if diff := cmp.Diff(want, ours); diff != "" {
		t.Errorf("our lines (-want +got):\n%s", diff)
	}
	jump := lines[4]
	wantArgs := []string{"-m", "comment", "--comment", "lbchaos run=0123456789abcdef owner=host/42/777", "-j", "LBCHAOS-01234567"}
	if diff := cmp.Diff(wantArgs, jump.args); diff != "" {
		t.Errorf("jump's arguments, which -D takes back (-want +got):\n%s", diff)
	}
	if got := splitWords(lines[len(lines)-1].text); got[5] != `say "hi"` {
		t.Errorf("escaped quotes: %q", got)
	}
}

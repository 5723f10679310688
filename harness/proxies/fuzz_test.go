package proxies

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// fuzzIDs are the upstreams of the fuzzed logs, by the names nginx
// (address), HAProxy (server name) and caddy (address) log them.
var fuzzIDs = map[string]int{"127.0.0.1:9001": 0, "127.0.0.1:9002": 1, "i0": 0, "i1": 1, "i2": 2}

// logKinds are the proxies whose access logs attribution reads.
var logKinds = []string{proxyspec.Nginx, proxyspec.HAProxy, proxyspec.Caddy}

// maxLogLine bounds a fuzzed log: attribution reads lines with
// bufio.Scanner, whose 64 KiB limit on a line no proxy's line comes near.
const maxLogLine = 32 << 10

// FuzzAccessLog reads request access logs as attribution does after a run,
// for nginx and HAProxy ("seq upstream status") and caddy (JSON lines).
// Whatever the log holds, every attributed request maps to a known
// instance, and the attribution written back as a log of the same proxy
// reads back the same.
func FuzzAccessLog(f *testing.F) {
	for _, s := range []string{
		"1 127.0.0.1:9001 200\n2 127.0.0.1:9001, 127.0.0.1:9002 502\n3 - 504\n",
		"1 i0 200\n2 i1 503\n2 i2 200\n18446744073709551615 i0 200\n-1 i0 200\nx i0\n\n",
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
	}
	for _, s := range []string{
		`{"level":"debug","msg":"upstream roundtrip","upstream":"127.0.0.1:9002","request":{"headers":{"X-Vegeta-Seq":["7"]}}}` + "\n" +
			`{"msg":"upstream roundtrip","upstream":"127.0.0.1:9001","request":{"headers":{"X-Vegeta-Seq":["x"]}}}` + "\n" +
			`{"msg":"handled request","upstream":"127.0.0.1:9001"}` + "\n{\n",
	} {
		f.Add(uint8(2), []byte(s))
	}
	dir := f.TempDir()

	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		if len(data) > maxLogLine {
			return
		}
		kind := logKinds[int(which)%len(logKinds)]
		p := &proxyProcess{cfg: proxyConfig{spec: proxyspec.Spec{Kind: kind}}, log: filepath.Join(dir, "access.log"), ids: fuzzIDs}
		if err := os.WriteFile(p.log, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := p.attribution()
		if err != nil {
			t.Fatalf("%s log %q: %v", kind, data, err)
		}
		known := slices.Collect(maps.Values(fuzzIDs))
		for seq, id := range got {
			if !slices.Contains(known, id) {
				t.Fatalf("%s log %q: request %d attributed to unknown instance %d", kind, data, seq, id)
			}
		}
		if err := os.WriteFile(p.log, writeAccessLog(t, kind, got), 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := p.attribution()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, back) {
			t.Fatalf("%s log %q attributed %v; written back, %v", kind, data, got, back)
		}
	})
}

// writeAccessLog writes attribution as kind's log: one line per request.
func writeAccessLog(t *testing.T, kind string, attr map[uint64]int) []byte {
	t.Helper()
	name := map[int]string{0: "127.0.0.1:9001", 1: "127.0.0.1:9002", 2: "i2"}
	var b strings.Builder
	for _, seq := range slices.Sorted(maps.Keys(attr)) {
		up, ok := name[attr[seq]]
		if !ok {
			t.Fatalf("instance %d has no %s upstream", attr[seq], kind)
		}
		if kind == proxyspec.Caddy {
			line, err := json.Marshal(map[string]any{
				"msg": "upstream roundtrip", "upstream": up,
				"request": map[string]any{"headers": map[string][]string{transport.SeqHeader: {strconv.FormatUint(seq, 10)}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		fmt.Fprintf(&b, "%d %s 200\n", seq, up)
	}
	return []byte(b.String())
}

// FuzzConnLine reads connection-log lines as ConnAttribution does. An
// accepted line gives a client port a TCP connection can have, an upstream
// and a start at or after the epoch that, written back as HAProxy logs it,
// reads back the same.
func FuzzConnLine(f *testing.F) {
	for _, s := range []string{
		"40000 127.0.0.1:9001 1796131934.901 0.500", "40000 127.0.0.1:9001, 127.0.0.1:9002 1796131940.000 2.000",
		"40001 i1 1796131934.042 1500", "", "- - - -", "40000 i0 x 1", "40000 i0", "-1 i0 1.0 1",
		"70000 i0 1.0 1", "1 i0 NaN 1", "1 i0 1e300 1", "1 i0 1.0 -Inf", "1 a, b, 5 2", "1 a, 5 2 3",
	} {
		f.Add(false, s)
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, nginx bool, line string) {
		kind := proxyspec.HAProxy
		if nginx {
			kind = proxyspec.Nginx
		}
		port, s, ok := parseConnLine(kind, line)
		if !ok {
			return
		}
		if port < 1 || port > 65535 {
			t.Fatalf("%s %q: accepted port %d", kind, line, port)
		}
		if s.upstream == "" {
			t.Fatalf("%s %q: accepted upstream %q", kind, line, s.upstream)
		}
		if s.start.Before(time.Unix(0, 0)) {
			t.Fatalf("%s %q: accepted a start before the epoch, %v", kind, line, s.start)
		}
		back := fmt.Sprintf("%d %s %d.%03d 0", port, s.upstream, s.start.UnixMilli()/1000, s.start.UnixMilli()%1000)
		port2, s2, ok := parseConnLine(proxyspec.HAProxy, back)
		if !ok || port2 != port || s2.upstream != s.upstream || !s2.start.Equal(s.start.Truncate(time.Millisecond)) {
			t.Fatalf("%s %q = %d %+v; written back as %q it reads %d %+v %v", kind, line, port, s, back, port2, s2, ok)
		}
	})
}

// TestConnLineRejectsNonConnections pins what fuzzing found: lines with a
// port no TCP connection has, or times that are not finite, overflow, or
// put the connection's start before the epoch, were read as connections
// with nonsense starts.
func TestConnLineRejectsNonConnections(t *testing.T) {
	for _, tt := range []struct{ kind, line string }{
		{"haproxy", "-1 i0 1796131934.042 1500"},
		{"haproxy", "0 i0 1796131934.042 1500"},
		{"haproxy", "70000 i0 1796131934.042 1500"},
		{"haproxy", "40000 i0 NaN 1500"},
		{"haproxy", "40000 i0 1e300 1500"},
		{"haproxy", "40000 i0 -5 1500"},
		{"nginx", "40000 127.0.0.1:9001 1796131934.901 -Inf"},
		{"nginx", "40000 127.0.0.1:9001 1796131934.901 NaN"},
		{"nginx", "40000 127.0.0.1:9001, 5 2 3"},
	} {
		if port, s, ok := parseConnLine(tt.kind, tt.line); ok {
			t.Errorf("%s %q read as port %d, %+v", tt.kind, tt.line, port, s)
		}
	}
	if _, s, ok := parseConnLine("nginx", "40000 127.0.0.1:9001 2.000 2.000"); !ok || !s.start.Equal(time.Unix(0, 0)) {
		t.Errorf("a session as long as the time since the epoch: %+v, %v; want a start at the epoch", s, ok)
	}
}

// TestAttributionTakesLastUpstreamTried pins what writing the access-log
// fuzz target brought to light: of nginx's "addr1, addr2" after a retry,
// attribution read the first address, not the one that answered.
func TestAttributionTakesLastUpstreamTried(t *testing.T) {
	p := &proxyProcess{cfg: proxyConfig{spec: proxyspec.Spec{Kind: proxyspec.Nginx}}, log: filepath.Join(t.TempDir(), "access.log"), ids: fuzzIDs}
	log := "1 127.0.0.1:9001 200\n2 127.0.0.1:9001, 127.0.0.1:9002 200\n3 127.0.0.1:9002, 127.0.0.1:9001, 127.0.0.1:9002 502\n4 127.0.0.1:9002\n"
	if err := os.WriteFile(p.log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := p.attribution()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[uint64]int{1: 0, 2: 1, 3: 1, 4: 1}; !maps.Equal(got, want) {
		t.Errorf("attribution of %q = %v, want %v", log, got, want)
	}
}

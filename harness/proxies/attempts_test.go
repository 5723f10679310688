package proxies

import (
	"slices"
	"testing"
)

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name, line string
		ok         bool
		seq        uint64
		upstreams  []string
	}{
		{"haproxy", "17 i2 200", true, 17, []string{"i2"}},
		{"nginx, one attempt", "18 127.0.0.1:9001 200 | 200", true, 18, []string{"127.0.0.1:9001"}},
		{"nginx, a retry", "19 127.0.0.1:9000, 127.0.0.1:9001 200 | 503, 200", true, 19, []string{"127.0.0.1:9000", "127.0.0.1:9001"}},
		{"nginx, upstream groups", "20 127.0.0.1:9000, 127.0.0.1:9001 : 127.0.0.1:9002 502 | 503, 503 : 502", true, 20,
			[]string{"127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002"}},
		{"nginx, no upstream", "21 - 504 | -", true, 21, nil},
		{"older format without statuses", "22 127.0.0.1:9000, 127.0.0.1:9003 200", true, 22, []string{"127.0.0.1:9000", "127.0.0.1:9003"}},
		{"no sequence number (readiness check)", "- - 204 | -", false, 0, nil},
		{"short", "23", false, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := parseLogLine(tc.line)
			if ok != tc.ok || l.seq != tc.seq || !slices.Equal(l.upstreams, tc.upstreams) {
				t.Errorf("parseLogLine(%q) = %d %q %v, want %d %q %v", tc.line, l.seq, l.upstreams, ok, tc.seq, tc.upstreams, tc.ok)
			}
		})
	}
}

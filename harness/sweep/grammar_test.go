package sweep

import (
	"slices"
	"strings"
	"testing"
)

func TestParseVary(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Dim
		tmpl string
	}{
		{"rate=1000..8000:8", []Dim{{Name: "rate", Values: []string{"1000", "2000", "3000", "4000", "5000", "6000", "7000", "8000"}}}, ""},
		{"rate=500,1000, 2000", []Dim{{Name: "rate", Values: []string{"500", "1000", "2000"}}}, ""},
		{"timeout=100ms..1s:4", []Dim{{Name: "timeout", Values: []string{"100ms", "400ms", "700ms", "1s"}}}, ""},
		{"faults=on,off", []Dim{{Name: "faults", Values: []string{"on", "off"}}}, ""},
		{"instances=2..10:5", []Dim{{Name: "instances", Values: []string{"2", "4", "6", "8", "10"}}}, ""},
		{"least-inflight+eject(consecutive={1,3,5,10},duration={1s,5s,30s})", []Dim{
			{Name: "consecutive", Values: []string{"1", "3", "5", "10"}, InTemplate: true},
			{Name: "duration", Values: []string{"1s", "5s", "30s"}, InTemplate: true}}, "least-inflight+eject(consecutive=1,duration=5s)"},
		{"p2c+eject(consecutive=5, max={0.1..0.5:3})", []Dim{{Name: "max", Values: []string{"0.1", "0.3", "0.5"}, InTemplate: true}}, "p2c+eject(consecutive=5, max=0.1)"},
		// Spaces around '=', 12 significant digits, no exponent.
		{"rate = 1..2:2", []Dim{{Name: "rate", Values: []string{"1", "2"}}}, ""},
		{"rate=1000000..1000001:3", []Dim{{Name: "rate", Values: []string{"1000000", "1000000.5", "1000001"}}}, ""},
		{"rate=0.1..0.7:7", []Dim{{Name: "rate", Values: []string{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"}}}, ""},
		{"rate=1e6,2e6", []Dim{{Name: "rate", Values: []string{"1e6", "2e6"}}}, ""},
		// A unit on TO alone applies to FROM too.
		{"cross_zone_latency=0..2s:3", []Dim{{Name: "cross_zone_latency", Values: []string{"0s", "1s", "2s"}}}, ""},
		{"workers=0,1", []Dim{{Name: "workers", Values: []string{"0", "1"}}}, ""},
		{"p2c+eject(consecutive = {1,3})", []Dim{{Name: "consecutive", Values: []string{"1", "3"}, InTemplate: true}}, "p2c+eject(consecutive = 1)"},
		{"p2c+eject(duration={1..3s:3})", []Dim{{Name: "duration", Values: []string{"1s", "2s", "3s"}, InTemplate: true}}, "p2c+eject(duration=5s)"},
	} {
		dims, tmpl, err := ParseVary(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if !slices.EqualFunc(dims, c.want, func(a, b Dim) bool {
			return a.Name == b.Name && a.InTemplate == b.InTemplate && slices.Equal(a.Values, b.Values)
		}) {
			t.Errorf("%s: dims %+v, want %+v", c.in, dims, c.want)
		}
		if (tmpl != nil) != (c.tmpl != "") {
			t.Errorf("%s: template %v", c.in, tmpl)
		} else if tmpl != nil {
			vals := map[string]string{}
			for _, d := range dims {
				vals[d.Name] = d.Values[0]
			}
			if d := dims[len(dims)-1]; d.Name == "duration" {
				vals["duration"] = "5s"
			}
			if got := tmpl.Fill(vals); got != c.tmpl {
				t.Errorf("%s: filled %q, want %q", c.in, got, c.tmpl)
			}
		}
	}
}

func TestBadVary(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "--vary: empty"},
		{"speed=1,2", `unknown setting "speed"`},
		{"rate=", "no values"},
		{"rate=1000..8000", "needs its number of values: FROM..TO:N"},
		{"rate=1000..8000:1", "N must be a whole number within [2, 1000]"},
		{"rate=8000..1000:4", "FROM must be below TO"},
		{"rate=1000..8s:4", "both be durations or both numbers"},
		{"rate=fast..8000:4", `FROM "fast": not a number or a duration`},
		{"rate=0,100", `"0": want a number > 0`},
		{"rate=100,100", `value "100" is listed twice`},
		{"timeout=soon", `"soon": want a duration > 0`},
		{"cross_zone_latency=-1s", `"-1s": want a duration >= 0`},
		// Values that would leave the experiment's own in place.
		{"instances=0,2", `--vary instances=0,2: "0": want a whole number >= 1`},
		{"duration=0s,10s", `--vary duration=0s,10s: "0s": want a duration > 0`},
		{"replicas=0..2:3", `"0": want a whole number >= 1`},
		// The same value written twice.
		{"rate=1000,1e3", `values "1000" and "1e3" are the same value`},
		{"timeout=1s,1000ms", `values "1s" and "1000ms" are the same value`},
		{"seed=1,01", `values "1" and "01" are the same value`},
		{"p2c+eject(consecutive={1,1.0})", `values "1" and "1.0" are the same value`},
		{"timeout=1s..2:3", "both be durations or both numbers"},
		{"instances=1..4:3", "are not whole numbers"},
		{"faults=yes", `"yes": want on or off`},
		{"faults=0..1:2", "takes on or off, not a range"},
		{"p2c+eject(consecutive={1,3)", "a '{' without its '}'"},
		{"p2c+eject(consecutive=1,3})", "a '}' without its '{'"},
		{"p2c+eject({1,3})", "must be a parameter's value"},
		{"p2c+eject(consecutive={1,3},consecutive={5})", "parameter consecutive is varied twice"},
		{"p2c+eject(consecutive={1,(3)})", "a value holds no"},
		{"p2c+eject", "neither NAME=VALUES"},
	} {
		_, _, err := ParseVary(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseVary(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, "give at least one"},
		{[]string{"rate=1,2", "rate=3,4"}, "rate is already varied"},
		{[]string{"p2c+eject(consecutive={1,2})", "round-robin+eject(duration={1s,2s})"}, "one strategy template per sweep"},
		{[]string{"rate=1..1000:1000", "seed=1..100:100"}, "a sweep has at most 10000"},
	} {
		if _, err := ParseGrid(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseGrid(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"p99_ms", "want METRIC OP NUMBER"},
		{"p95_ms < 3", `unknown metric "p95_ms"`},
		{"error_ratio < 5", "is a ratio between 0 and 1"},
		{"p99_ms about 3", "want \"OP NUMBER\""},
	} {
		if _, err := ParseBound(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseBound(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestPointsProduct(t *testing.T) {
	g, err := ParseGrid([]string{"rate=1,2", "faults=on,off", "p2c+eject(consecutive={1,5})"})
	if err != nil {
		t.Fatal(err)
	}
	pts := g.Points()
	if len(pts) != 8 || g.Size() != 8 {
		t.Fatalf("%d points, size %d", len(pts), g.Size())
	}
	var labels []string
	for _, p := range pts {
		labels = append(labels, g.Label(p))
	}
	if labels[0] != "rate=1 faults=on consecutive=1" || labels[1] != "rate=1 faults=on consecutive=5" || labels[7] != "rate=2 faults=off consecutive=5" {
		t.Errorf("order %q", labels)
	}
	if pts[3].Dir() != "point-004" {
		t.Errorf("dir %s", pts[3].Dir())
	}
}

func TestFormatNumber(t *testing.T) {
	for in, want := range map[float64]string{0.30000000000000004: "0.3", 1e6: "1000000", 1234.5678901234: "1234.56789012", 50: "50", 0: "0"} {
		if got := FormatNumber(in); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", in, got, want)
		}
	}
}

package faultyserver

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// controlFieldPrefixes are the first words an error of PUT /_chaos/fault
// may start with besides a parameter of some mode: the body as a whole, the
// JSON document and its mode.
var controlFieldPrefixes = []string{"body", "fault", "mode"}

// FuzzControlFault PUTs bodies to the fault endpoint of a real Server. An
// accepted body must be the fault in force, and GET must give it back in a
// form that parses to the same fault; a rejected one must leave the fault in
// force alone and get a message starting with the field at fault.
func FuzzControlFault(f *testing.F) {
	for _, s := range []string{
		`{"mode":"fail","status":503,"delay":"1ms"}`,
		`{"mode":"error-rate","p":0.5,"status":500,"delay":"0s"}`,
		`{"mode":"slow","dist":{"dist":"normal","mean":"167ms","sd":"5ms"}}`,
		`{"mode":"jitter","min_factor":1,"max_factor":2}`,
		`{"mode":"hang"}`, `{"mode":"reset"}`, `{"mode":"kill"}`, `{"mode":"pause"}`,
		`{"mode":"cpu","cpus":0.1}`, `{"mode":"fail","health_status":500}`,
		`{"mode":"fail","status":99}`, `{"mode":"error-rate","p":1.5}`,
		`{"mode":"nope"}`, `{"mode":3}`, `{"status":503}`, `null`, `[]`, `{`, ``,
		`{"mode":"fail","mode":"hang"}`, `{"mode":"fail","delay":5}`, `{"mode":"fail","extra":1}`,
	} {
		f.Add([]byte(s))
	}
	for _, m := range FaultModes() {
		f.Add([]byte(`{"mode":"` + m + `"}`))
	}

	s, err := New(Config{ID: 1, Service: Fixed(0)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Close)
	initial := Fault(Fail{Status: 502, Delay: Duration(time.Millisecond)})
	fields := slices.Clone(controlFieldPrefixes)
	for _, m := range modes {
		fields = append(fields, m.fields...)
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		if err := s.SetFault(initial); err != nil {
			t.Fatal(err)
		}
		put := httptest.NewRecorder()
		s.ServeHTTP(put, httptest.NewRequest(http.MethodPut, FaultPath, strings.NewReader(string(body))))

		switch {
		case put.Code == http.StatusOK:
			get := httptest.NewRecorder()
			s.ServeHTTP(get, httptest.NewRequest(http.MethodGet, FaultPath, nil))
			if get.Code != http.StatusOK {
				t.Fatalf("GET after PUT %q: status %d %q", body, get.Code, get.Body)
			}
			if get.Body.String() != put.Body.String() {
				t.Fatalf("PUT %q answered %q, but GET gives %q", body, put.Body, get.Body)
			}
			back, err := ParseFault(get.Body.Bytes())
			if err != nil {
				t.Fatalf("PUT %q accepted; GET gives %q, which does not parse: %v", body, get.Body, err)
			}
			sent, err := ParseFault(body)
			if err != nil {
				t.Fatalf("PUT %q accepted, but ParseFault rejects it: %v", body, err)
			}
			if diff := cmp.Diff(sent, back); diff != "" {
				t.Fatalf("PUT %q: fault read back differs (-sent +got):\n%s", body, diff)
			}
			if diff := cmp.Diff(sent, s.Fault()); diff != "" {
				t.Fatalf("PUT %q: fault in force differs (-sent +in force):\n%s", body, diff)
			}
		case put.Code >= 400 && put.Code < 500:
			if diff := cmp.Diff(initial, s.Fault()); diff != "" {
				t.Fatalf("rejected PUT %q changed the fault in force (-before +after):\n%s", body, diff)
			}
			var e errorBody
			if err := json.Unmarshal(put.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("rejected PUT %q: body %q is not {\"error\": ...}", body, put.Body)
			}
			field, _, ok := strings.Cut(e.Error, ":")
			known := ok && allFunc(strings.Split(field, ", "), func(w string) bool { return slices.Contains(fields, w) })
			if !known && !namesKey(e.Error, body) {
				t.Fatalf("rejected PUT %q: message %q does not start with the field at fault", body, e.Error)
			}
		default:
			t.Fatalf("PUT %q: status %d %q, want 200 or 4xx", body, put.Code, put.Body)
		}
	})
}

// distFields are the words a rejected distribution's message may start
// with: Dist's JSON fields, and its kinds for the shorthand.
var distFields = append([]string{"malformed JSON", "dist", "value", "min", "max", "mean", "sd", "median", "sigma", "unknown distribution"}, DistKinds()...)

// FuzzDist reads service-time distributions as --service and experiment
// files write them, and Go durations as Duration reads them in JSON and
// YAML. An accepted distribution validates, round-trips through both its
// forms and samples within its bounds; a rejected one names its field or
// kind.
func FuzzDist(f *testing.F) {
	for _, s := range []string{
		"fixed:10ms", "uniform:5ms,15ms", "exponential:10ms", "normal:10ms,2ms", "lognormal:10ms,0.5",
		"normal:167ms, 5ms", "fixed:-1ms", "uniform:15ms,5ms", "lognormal:10ms,NaN", "lognormal:10ms,-1",
		"fixed:", "fixed", "poisson:1s", "fixed:1ms,2ms", "exponential:0s", "fixed:9223372036854775807ns",
		`{"dist":"fixed","value":"10ms"}`, `{"dist":"normal","mean":"167ms","sd":"5ms"}`,
		`{"dist":"lognormal","median":"10ms","sigma":0.5}`, `{"dist":"fixed","value":5}`,
		`{"dist":"fixed","mean":"1s"}`, `{"dist":"fixed","extra":1}`, `{"dist":"fixed"`, `{}`,
		"1.5s", "-3h2m", "1µs", "0", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDuration(t, s)
		d, err := ParseDistFlag(s)
		if err != nil {
			msg := err.Error()
			if !namesKey(msg, []byte(s)) && !slices.ContainsFunc(distFields, func(w string) bool { return strings.HasPrefix(msg, w) }) {
				t.Fatalf("ParseDistFlag(%q): error %q does not start with the field or distribution at fault", s, msg)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("ParseDistFlag(%q) accepted %+v, which does not validate: %v", s, d, err)
		}
		js, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", d, err)
		}
		if back, err := ParseDistFlag(string(js)); err != nil || back != d {
			t.Fatalf("ParseDistFlag(%q) = %+v; its JSON %s reads back as %+v, %v", s, d, js, back, err)
		}
		short := shorthand(d)
		if back, err := ParseDistFlag(short); err != nil || back != d {
			t.Fatalf("ParseDistFlag(%q) = %+v; its shorthand %q reads back as %+v, %v", s, d, short, back, err)
		}
		y, err := yaml.Marshal(d)
		if err != nil {
			t.Fatalf("yaml.Marshal(%+v): %v", d, err)
		}
		var back Dist
		if err := yaml.Unmarshal(y, &back); err != nil || back != d {
			t.Fatalf("ParseDistFlag(%q) = %+v; its YAML %q reads back as %+v, %v", s, d, y, back, err)
		}
		checkSamples(t, d)
	})
}

// shorthand writes d as --service takes it.
func shorthand(d Dist) string {
	dur := func(v Duration) string { return time.Duration(v).String() }
	switch d.Kind {
	case DistFixed:
		return "fixed:" + dur(d.Value)
	case DistUniform:
		return "uniform:" + dur(d.Min) + "," + dur(d.Max)
	case DistExponential:
		return "exponential:" + dur(d.Mean)
	case DistNormal:
		return "normal:" + dur(d.Mean) + "," + dur(d.SD)
	case DistLognormal:
		return "lognormal:" + dur(d.Median) + "," + strconv.FormatFloat(d.Sigma, 'g', -1, 64)
	}
	return d.Kind
}

func checkSamples(t *testing.T, d Dist) {
	smp, err := NewSampler(d, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatalf("NewSampler(%+v) of an accepted distribution: %v", d, err)
	}
	for range 8 {
		v := smp.Sample()
		switch {
		case v < 0:
			t.Fatalf("%+v sampled %v < 0", d, v)
		case d.Kind == DistFixed && v != time.Duration(d.Value):
			t.Fatalf("%+v sampled %v", d, v)
		case d.Kind == DistUniform && (v < time.Duration(d.Min) || v > time.Duration(d.Max)):
			t.Fatalf("%+v sampled %v, outside [min, max]", d, v)
		}
	}
}

// checkDuration reads s as a Duration in JSON and YAML: either both accept
// it with the value time.ParseDuration gives, writing it back reading the
// same, or both reject it with the duration error.
func checkDuration(t *testing.T, s string) {
	// JSON text holds s with invalid UTF-8 replaced; Duration must read
	// what a JSON string decodes to.
	js, _ := json.Marshal(s)
	var js2 string
	if err := json.Unmarshal(js, &js2); err != nil {
		t.Fatal(err)
	}
	if js2 != s {
		return
	}
	want, perr := time.ParseDuration(s)
	var dj Duration
	jerr := json.Unmarshal(js, &dj)
	var dy Duration
	yerr := dy.UnmarshalYAML(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
	if perr != nil {
		for _, err := range []error{jerr, yerr} {
			if err == nil || !strings.Contains(err.Error(), "want a duration like") {
				t.Fatalf("Duration of %q: got %v, want the duration error", s, err)
			}
		}
		return
	}
	if jerr != nil || yerr != nil || time.Duration(dj) != want || time.Duration(dy) != want {
		t.Fatalf("Duration of %q: JSON %v %v, YAML %v %v; want %v", s, dj, jerr, dy, yerr, want)
	}
	out, err := json.Marshal(dj)
	if err != nil {
		t.Fatal(err)
	}
	var again Duration
	if err := json.Unmarshal(out, &again); err != nil || again != dj {
		t.Fatalf("Duration %v written as %s reads back as %v, %v", dj, out, again, err)
	}
}

func allFunc[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if !f(v) {
			return false
		}
	}
	return true
}

// namesKey reports whether msg starts with a key of the JSON object in
// data, as fieldName writes it.
func namesKey(msg string, data []byte) bool {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(data, &keys)
	for k := range keys {
		if strings.HasPrefix(msg, fieldName(k)+": ") {
			return true
		}
	}
	return false
}

// TestFaultErrorQuotesOddKeys pins what fuzzing found: an unknown
// parameter whose name is empty or holds ":" began the message as ": ..."
// or ":: ...", which does not read as a field.
func TestFaultErrorQuotesOddKeys(t *testing.T) {
	for body, want := range map[string]string{
		`{"mode":"fail",":":0}`:       `":": unknown parameter for mode "fail"`,
		`{"mode":"fail","":0}`:        `"": unknown parameter for mode "fail"`,
		`{"mode":"fail","a b":0}`:     `"a b": unknown parameter for mode "fail"`,
		`{"mode":"fail","extra":0}`:   `extra: unknown parameter for mode "fail"`,
		`{"dist":"fixed","x:y":"1s"}`: `"x:y": unknown field "x:y"`,
	} {
		var err error
		if strings.Contains(body, `"dist"`) {
			_, err = ParseDistFlag(body)
		} else {
			_, err = ParseFault([]byte(body))
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err = %v, want one starting %s", body, err, want)
		}
	}
}

// TestSamplerExactAboveFloatPrecision pins what fuzzing found: a fixed
// distribution of more than 2^53 ns sampled a float64's rounding of its
// value, and a uniform one could leave [min, max] the same way.
func TestSamplerExactAboveFloatPrecision(t *testing.T) {
	const big = Duration(1e16 + 1)
	for _, d := range []Dist{{Kind: DistFixed, Value: big}, {Kind: DistUniform, Min: big, Max: big}, {Kind: DistUniform, Min: big, Max: big + 2}} {
		smp, err := NewSampler(d, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if v := smp.Sample(); v < time.Duration(big) || v > time.Duration(max(d.Value, d.Max)) {
				t.Fatalf("%+v sampled %d ns", d, v)
			}
		}
	}
}

package reports

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "round-robin", "round-robin"},
		{"wrapper with params", "least-inflight+eject(consecutive=5,duration=5s)", "least-inflight-eject-consecutive-5-duration-5s"},
		{"upper case and spaces", "P2C Slow Start", "p2c-slow-start"},
		{"decimal", "bounded-load(c=1.25)", "bounded-load-c-1-25"},
		{"leading and trailing junk", "  +p2c+  ", "p2c"},
		{"path separators", "../etc/passwd", "etc-passwd"},
		{"non-ascii", "ρ-hash", "hash"},
		{"nothing usable", "+()", "strategy"},
		{"empty", "", "strategy"},
		{"long", strings.Repeat("ab-", 40), strings.TrimSuffix(strings.Repeat("ab-", 27), "-")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slug(tc.in); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// checkFiles verifies every plot's PNG decodes and every SVG parses as XML.
func checkFiles(t *testing.T, dir string, plots []Plot) {
	t.Helper()
	for _, p := range plots {
		b, err := os.ReadFile(filepath.Join(dir, p.PNG))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", p.PNG, err)
		} else if r := img.Bounds(); r.Dx() < 800 || r.Dy() < 250 {
			t.Errorf("%s: %v, too small to read", p.PNG, r)
		}
		b, err = os.ReadFile(filepath.Join(dir, p.SVG))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s: no <svg element", p.SVG)
		}
		dec := xml.NewDecoder(bytes.NewReader(b))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("%s: %v", p.SVG, err)
				break
			}
		}
	}
}

func TestRenderPlots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := sampleSummary()
	plots, err := RenderPlots(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plots {
		names = append(names, p.PNG, p.SVG)
	}
	const ej = "least-inflight-eject-consecutive-5-duration-5s"
	want := []string{
		"round-robin/latency.png", "round-robin/latency.svg",
		"round-robin/errors.png", "round-robin/errors.svg",
		"round-robin/rate.png", "round-robin/rate.svg",
		"least-inflight/latency.png", "least-inflight/latency.svg",
		"least-inflight/errors.png", "least-inflight/errors.svg",
		"least-inflight/rate.png", "least-inflight/rate.svg",
		ej + "/latency.png", ej + "/latency.svg",
		ej + "/errors.png", ej + "/errors.svg",
		ej + "/rate.png", ej + "/rate.svg",
		ej + "/health.png", ej + "/health.svg",
		"success.png", "success.svg",
		"percentiles.png", "percentiles.svg",
		"share.png", "share.svg",
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	for _, p := range plots {
		if p.Title == "" {
			t.Errorf("%s: no title", p.PNG)
		}
	}
	if plots[0].Strategy != "round-robin" || plots[len(plots)-1].Strategy != "" {
		t.Errorf("strategy fields: first %q, last %q", plots[0].Strategy, plots[len(plots)-1].Strategy)
	}
	checkFiles(t, dir, plots)
}

func TestRenderPlotsDegenerate(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	many := sampleSummary().Strategies[0]
	many.Name = "round-robin"
	many.Percentiles = nil
	for i := 10; i < 25; i++ {
		many.Instances = append(many.Instances, Instance{ID: i, Share: 0.02})
		ser := many.Timeline.Instances[i%10]
		ser.ID = i
		many.Timeline.Instances = append(many.Timeline.Instances, ser)
	}
	for _, tc := range []struct {
		name      string
		s         *Summary
		wantPlots int
	}{
		{"no strategies", &Summary{}, 0},
		{"no timeline", &Summary{Strategies: []Strategy{{Name: "a", Instances: []Instance{{ID: 0, Share: 1}}}}}, 1},
		{"empty timeline", &Summary{Strategies: []Strategy{{Name: "a", Timeline: &Timeline{BucketS: 1}}}}, 0},
		{"zero bucket", &Summary{Strategies: []Strategy{{Name: "a", Timeline: &Timeline{Instances: []InstanceSeries{{Requests: []int64{1}}}}}}}, 0},
		{"all zero latency", &Summary{Strategies: []Strategy{{Name: "a", Timeline: &Timeline{BucketS: 1,
			Instances: []InstanceSeries{{Requests: []int64{0, 0}, Errors: []int64{0, 0}, P50Ms: []float64{0, 0}, P99Ms: []float64{0, 0}}}}}}}, 0},
		{"non-finite values", &Summary{
			FaultyInstances: []int{1},
			Faults:          []FaultWindow{{Instance: 1, StartS: nan, EndS: 3}, {Instance: 1, StartS: 1, EndS: inf}, {Instance: 1, StartS: 2, EndS: 1}},
			SlowThresholdMs: nan,
			Strategies: []Strategy{{Name: "a", Events: []Event{{TimeS: nan, Kind: "eject"}},
				Instances: []Instance{{ID: 0, Share: nan}, {ID: 1, Share: inf}},
				Timeline: &Timeline{BucketS: 0.5, Instances: []InstanceSeries{
					{ID: 0, Requests: []int64{1, 2, 3, 4}, Errors: []int64{0, 5, 1, 0}, P50Ms: []float64{1, nan, -1, 2}, P99Ms: []float64{inf, 3, 4, nan}},
					{ID: 1, Requests: []int64{1, 0}, Errors: []int64{1}, P50Ms: []float64{5}, P99Ms: []float64{6, 7, 8}},
				}}}}}, 4},
		{"single point", &Summary{Strategies: []Strategy{{Name: "a", Timeline: &Timeline{BucketS: 1,
			Instances: []InstanceSeries{{Requests: []int64{3}, Errors: []int64{1}, P50Ms: []float64{4}, P99Ms: []float64{4}}}}}}}, 3},
		{"more instances than legend entries", &Summary{Instances: 25, FaultyInstances: []int{3}, Strategies: []Strategy{many}}, 5},
		{"same slug twice", &Summary{Strategies: []Strategy{
			{Name: "p2c+eject", Instances: []Instance{{ID: 0}}}, {Name: "p2c(eject)", Instances: []Instance{{ID: 0}}}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			plots, err := RenderPlots(dir, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if len(plots) != tc.wantPlots {
				t.Errorf("got %d plots %+v, want %d", len(plots), plots, tc.wantPlots)
			}
			checkFiles(t, dir, plots)
		})
	}
}

func TestUniqueSlug(t *testing.T) {
	used := map[string]bool{}
	var got []string
	for _, name := range []string{"p2c+eject", "p2c(eject)", "p2c-eject", "p2c"} {
		got = append(got, uniqueSlug(Slug(name), used))
	}
	if d := cmp.Diff([]string{"p2c-eject", "p2c-eject-2", "p2c-eject-3", "p2c"}, got); d != "" {
		t.Error(d)
	}
}

func TestWriteAllNamesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteAll(filepath.Join(file, "sub"), sampleSummary())
	if err == nil || !strings.Contains(err.Error(), "file") {
		t.Errorf("WriteAll into a path under a file: error %v", err)
	}
	err = WriteAll(t.TempDir(), &Summary{TargetRate: math.NaN()})
	if err == nil || !strings.Contains(err.Error(), SummaryFile) {
		t.Errorf("WriteAll with a NaN: error %v, want one naming %s", err, SummaryFile)
	}
}

func BenchmarkRenderPlots(b *testing.B) {
	s := sampleSummary()
	dir := b.TempDir()
	for b.Loop() {
		if _, err := RenderPlots(dir, s); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEjectionSpansFromHealthAndProbes(t *testing.T) {
	events := []Event{
		{TimeS: 1, Instance: 0, Kind: "health", Detail: "degraded"},
		{TimeS: 2, Instance: 0, Kind: "health", Detail: "unhealthy"},
		{TimeS: 5, Instance: 0, Kind: "health", Detail: "critical"},
		{TimeS: 3, Instance: 1, Kind: "probe", Detail: "down"},
		{TimeS: 4, Instance: 1, Kind: "probe", Detail: "up"},
		{TimeS: 6, Instance: 2, Kind: "eject"},
	}
	got := ejectionSpans(events, 10)
	want := map[int][][2]float64{0: {{2, 5}}, 1: {{3, 4}}, 2: {{6, 10}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
}

func TestHealthLevelSpans(t *testing.T) {
	events := []Event{
		{TimeS: 1, Instance: 0, Kind: "health", Detail: "degraded"},
		{TimeS: 3, Instance: 0, Kind: "health", Detail: "critical"},
		{TimeS: 4, Instance: 0, Kind: "health", Detail: "unhealthy"},
		{TimeS: 6, Instance: 0, Kind: "health", Detail: "critical"},
		{TimeS: 2, Instance: 1, Kind: "eject"},
		{TimeS: 5, Instance: 2, Kind: "health", Detail: "degraded"},
		{TimeS: 7, Instance: 2, Kind: "health", Detail: "healthy"},
	}
	got := healthLevelSpans(events, 10)
	want := map[int][]levelSpan{
		0: {{1, 3, "degraded"}, {3, 4, "critical"}, {6, 10, "critical"}},
		2: {{5, 7, "degraded"}},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(levelSpan{})); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
}

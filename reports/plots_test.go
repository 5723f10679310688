package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
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

// renderImage draws f as its PNG is drawn and returns the image and the
// canvas, whose points map to the image's pixels by pxRect.
func renderImage(f *figure) (image.Image, draw.Canvas) {
	img := vgimg.NewWith(vgimg.UseWH(f.w, f.height()), vgimg.UseDPI(pngDPI))
	c := draw.New(img)
	f.draw(c)
	return img.Image(), c
}

// pxRect is r, in points from the bottom left of c, in pixels of img.
func pxRect(img image.Image, c draw.Canvas, r vg.Rectangle) image.Rectangle {
	scale := float64(img.Bounds().Dy()) / float64(c.Max.Y-c.Min.Y)
	x := func(v vg.Length) int { return int(math.Round(float64(v-c.Min.X) * scale)) }
	y := func(v vg.Length) int { return img.Bounds().Dy() - int(math.Round(float64(v-c.Min.Y)*scale)) }
	return image.Rect(x(r.Min.X), y(r.Max.Y), x(r.Max.X), y(r.Min.Y))
}

// blendOf reports whether px is col drawn over white with at least the
// weight min (antialiased edges of thin strokes are such blends).
func blendOf(px, col color.Color, min float64) bool {
	p := color.RGBAModel.Convert(px).(color.RGBA)
	c := color.RGBAModel.Convert(col).(color.RGBA)
	lo, hi := 2.0, -1.0
	for _, ch := range [][2]uint8{{p.R, c.R}, {p.G, c.G}, {p.B, c.B}} {
		if ch[1] > 0xf0 {
			if ch[0] < ch[1]-12 {
				return false
			}
			continue
		}
		a := (255 - float64(ch[0])) / (255 - float64(ch[1]))
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	return hi < 0 || lo >= min && hi <= 1.04 && hi-lo <= 0.08
}

// countColour counts the pixels of img in r that show col (blendOf).
func countColour(img image.Image, r image.Rectangle, col color.Color, min float64) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if blendOf(img.At(x, y), col, min) {
				n++
			}
		}
	}
	return n
}

// swatchColour draws thumbs on their own and returns their most common
// colour other than white; ok is false when they draw nothing.
func swatchColour(thumbs []plot.Thumbnailer) (c color.RGBA, ok bool) {
	img := vgimg.NewWith(vgimg.UseWH(vg.Points(legendThumbW), vg.Points(12)), vgimg.UseDPI(pngDPI))
	dc := draw.New(img)
	dc.FillPolygon(color.White, rect(dc.Min.X, dc.Min.Y, dc.Max.X, dc.Max.Y))
	for _, th := range thumbs {
		th.Thumbnail(&dc)
	}
	count := map[color.RGBA]int{}
	im := img.Image()
	for y := im.Bounds().Min.Y; y < im.Bounds().Max.Y; y++ {
		for x := im.Bounds().Min.X; x < im.Bounds().Max.X; x++ {
			if px := color.RGBAModel.Convert(im.At(x, y)).(color.RGBA); px != (color.RGBA{0xff, 0xff, 0xff, 0xff}) {
				count[px]++
			}
		}
	}
	best := 0
	for col, n := range count {
		if n > best || n == best && fmt.Sprint(col) < fmt.Sprint(c) {
			c, best = col, n
		}
	}
	return c, best > 0
}

// legendEntry returns the index of f's legend entry whose label starts
// with prefix.
func legendIndex(t *testing.T, f *figure, prefix string) int {
	t.Helper()
	for i, e := range f.key.entries {
		if strings.HasPrefix(e.label, prefix) {
			return i
		}
	}
	t.Fatalf("no legend entry %q in:\n%s", prefix, legendLabels(f))
	return -1
}

// TestLegendSwatchesMatchTheirMarks renders figures and samples each
// legend swatch named below: it must show the colour of every mark it
// stands for as the plot draws it (the failure crosses, ejection lines,
// maxima and ejection bars are drawn in their instance's or strategy's
// colour), and no grey stand-in.
func TestLegendSwatchesMatchTheirMarks(t *testing.T) {
	s := sampleSummary()
	ej := &s.Strategies[2]
	ff := fastFailSummary(true)
	var allStrategies []color.Color
	for _, st := range summaryStyles(s) {
		allStrategies = append(allStrategies, st.Color)
	}
	for _, tc := range []struct {
		name  string
		fig   *figure
		entry string
		want  []color.Color
	}{
		{"failed seconds", latencyFigure(ff, &ff.Strategies[0]), "every request of the second failed", []color.Color{instanceColor(0)}},
		{"ejection lines", errorFigure(s, ej), "ejection", []color.Color{instanceColor(0)}},
		{"ejection bars", healthFigure(s, ej), "ejected", []color.Color{instanceColor(0)}},
		{"maxima", percentileFigure(s), "maximum", allStrategies},
		{"faulty instance's line", rateFigure(s, ej), "instance 0 (faulty)", []color.Color{instanceColor(0)}},
		{"healthy instance's line", rateFigure(s, ej), "instance 3", []color.Color{instanceColor(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, c := renderImage(tc.fig)
			_, key := tc.fig.layout(c)
			i := legendIndex(t, tc.fig, tc.entry)
			r := pxRect(img, c, tc.fig.key.layout(key.Size().X).thumbRect(key, i))
			for _, want := range tc.want {
				if n := countColour(img, r, want, 0.5); n < 3 {
					t.Errorf("swatch %q at %v: %d pixels of %v, the colour its marks are drawn in", tc.entry, r, n, want)
				}
			}
			for _, grey := range []color.Color{gray(0x33), gray(0x55)} {
				if n := countColour(img, r, grey, 0.5); n > 0 {
					t.Errorf("swatch %q at %v: %d pixels of the grey %v no mark is drawn in", tc.entry, r, n, grey)
				}
			}
		})
	}
}

// TestCoincidingLinesStayVisible renders the rate plot of a round-robin
// whose instances all get the same requests, the faulty one too, and
// checks that each instance's colour shows in the data area: no line
// hides another.
func TestCoincidingLinesStayVisible(t *testing.T) {
	same := []int64{100, 96, 98, 97, 101, 99}
	var series []InstanceSeries
	for id := range 4 {
		series = append(series, InstanceSeries{ID: id, Requests: same, Errors: make([]int64, len(same))})
	}
	s := &Summary{DurationS: 6, TargetRate: 400, FaultyInstances: []int{0}, Instances: 4, Strategies: []Strategy{{
		Name: "round-robin", Timeline: &Timeline{BucketS: 1, Instances: series}}}}
	f := rateFigure(s, &s.Strategies[0])
	img, c := renderImage(f)
	panels, _ := f.layout(c)
	data := pxRect(img, c, f.panels[0].DataCanvas(panels[0]).Rectangle)
	for id := range 4 {
		if n := countColour(img, data, instanceColor(id), 0.9); n < 200 {
			t.Errorf("instance %d: %d pixels of its colour %v in the data area, want its whole line", id, n, instanceColor(id))
		}
	}
}

// TestSpreadY checks the data model of coinciding lines: points within
// coincideTol are spread lineSpread apart about their mean, in drawing
// order, and kept inside the data area; others stay put; a crowd never
// spreads wider than maxSpread.
func TestSpreadY(t *testing.T) {
	pt := vg.Points
	for _, tc := range []struct {
		name string
		in   []vg.Length
		want []vg.Length
	}{
		{"apart", []vg.Length{pt(10), pt(20)}, []vg.Length{pt(10), pt(20)}},
		{"two equal", []vg.Length{pt(10), pt(10)}, []vg.Length{pt(9.25), pt(10.75)}},
		{"three near, one far", []vg.Length{pt(50), pt(10.5), pt(10), pt(10.25)}, []vg.Length{pt(50), pt(8.75), pt(10.25), pt(11.75)}},
		{"eleven equal", slices.Repeat([]vg.Length{pt(50)}, 11), []vg.Length{pt(45.5), pt(46.4), pt(47.3), pt(48.2), pt(49.1), pt(50), pt(50.9), pt(51.8), pt(52.7), pt(53.6), pt(54.5)}},
		{"at the bottom edge", []vg.Length{pt(0), pt(0), pt(0)}, []vg.Length{0, pt(1.5), pt(3)}},
		{"at the top edge", []vg.Length{pt(100), pt(100)}, []vg.Length{pt(98.5), pt(100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spreadY(tc.in, 0, pt(100))
			if d := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("spreadY(%v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

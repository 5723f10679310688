package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure geometry. Time plots are figWidth wide; the latency figure stacks
// two panels and is taller.
const (
	figWidth         = 10 * vg.Inch
	figHeight        = 5 * vg.Inch
	latencyFigHeight = 7.5 * vg.Inch
	pngDPI           = 120
	// maxLegendEntries is the number of instances listed one by one in a
	// legend; beyond it, healthy instances share one entry.
	maxLegendEntries = 20
)

// instancePalette gives each instance id the same colour in every plot
// (id modulo the palette length): the Tableau 10 colours, then their light
// variants from Tableau 20.
var instancePalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	{0xae, 0xc7, 0xe8, 0xff}, {0xff, 0xbb, 0x78, 0xff}, {0x98, 0xdf, 0x8a, 0xff}, {0xff, 0x98, 0x96, 0xff},
	{0xc5, 0xb0, 0xd5, 0xff}, {0xc4, 0x9c, 0x94, 0xff}, {0xf7, 0xb6, 0xd2, 0xff}, {0xc7, 0xc7, 0xc7, 0xff},
	{0xdb, 0xdb, 0x8d, 0xff}, {0x9e, 0xda, 0xe5, 0xff},
}

var (
	faultShade  = color.NRGBA{0xd6, 0x27, 0x28, 0x30} // not premultiplied
	healthyLine = vg.Points(1.2)
	faultyLine  = vg.Points(3)
)

func instanceColor(id int) color.Color {
	n := len(instancePalette)
	return instancePalette[((id%n)+n)%n]
}

// Slug turns a strategy name into a file-name-safe string: lower-case ASCII
// letters and digits, runs of anything else replaced by one '-', no leading
// or trailing '-', at most 80 bytes. A name with nothing usable gives
// "strategy".
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > 80 {
		s = strings.TrimRight(s[:80], "-")
	}
	if s == "" {
		return "strategy"
	}
	return s
}

// RenderPlots writes the plots of s into dir, each as PNG and SVG, and
// returns them in the order written, their paths relative to dir (see
// layout.go). For each strategy with a timeline, into its directory (d =
// StrategyDirs): its per-instance latency (d/latency), error rate
// (d/errors) and requests per second (d/rate) over time; for each strategy
// that ejected an instance, its ejections per instance (d/health). Then
// across strategies: the success rate when any strategy sent requests
// (success), the latency-by-percentile curves when any strategy has
// Percentiles (percentiles), and the per-instance request share when any
// strategy has instances (share). Errors name the file.
func RenderPlots(dir string, s *Summary) ([]Plot, error) {
	if s == nil {
		return nil, fmt.Errorf("reports: nil summary")
	}
	var out []Plot
	names := make([]string, len(s.Strategies))
	for i := range s.Strategies {
		names[i] = s.Strategies[i].Name
	}
	dirs := StrategyDirs(names)
	for i := range s.Strategies {
		st := &s.Strategies[i]
		figs := []struct {
			kind, title string
			fig         *figure
		}{
			{"latency", st.Name + ": latency per instance over time", latencyFigure(s, st)},
			{"errors", st.Name + ": error rate per instance over time", errorFigure(s, st)},
			{"rate", st.Name + ": requests per second per instance over time", rateFigure(s, st)},
			{"health", st.Name + ": ejections by instance over time", healthFigure(s, st)},
			{"flow", st.Name + ": offered, attempts and goodput over time", flowFigure(s, st)},
		}
		for _, f := range figs {
			if f.fig == nil {
				continue
			}
			p, err := f.fig.save(dir, path.Join(dirs[i], f.kind))
			if err != nil {
				return out, err
			}
			p.Title, p.Strategy = f.title, st.Name
			out = append(out, p)
		}
	}
	for _, f := range []struct {
		base, title string
		fig         *figure
	}{
		{"success", "Success rate by strategy", successFigure(s)},
		{"percentiles", "Latency by percentile, all strategies", percentileFigure(s)},
		{"share", "Request share per instance, by strategy", shareFigure(s)},
	} {
		if f.fig == nil {
			continue
		}
		p, err := f.fig.save(dir, f.base)
		if err != nil {
			return out, err
		}
		p.Title = f.title
		out = append(out, p)
	}
	return out, nil
}

// uniqueSlug returns slug, or slug with a numeric suffix when an earlier
// strategy already took it.
func uniqueSlug(slug string, used map[string]bool) string {
	s := slug
	for n := 2; used[s]; n++ {
		s = slug + "-" + strconv.Itoa(n)
	}
	used[s] = true
	return s
}

// figure is one image: panels stacked vertically, each h/len(panels) high
// in all, and its legend below them (gridLegend), which adds its own
// height to h.
type figure struct {
	panels []*plot.Plot
	key    gridLegend
	w, h   vg.Length
}

// figPad is the margin around a figure's panels.
const figPad = 8 // points

// height is the figure's whole height: its panels and its legend.
func (f *figure) height() vg.Length {
	return f.h + f.key.height(f.w-2*vg.Points(figPad))
}

func (f *figure) draw(c draw.Canvas) {
	c.FillPolygon(color.White, rect(c.Min.X, c.Min.Y, c.Max.X, c.Max.Y))
	cs, key := f.layout(c)
	for i, p := range f.panels {
		p.Draw(cs[i])
	}
	if len(f.key.entries) > 0 {
		f.key.draw(key)
	}
}

// layout splits c into the canvases of the panels, top to bottom, and of
// the legend below them.
func (f *figure) layout(c draw.Canvas) (panels []draw.Canvas, key draw.Canvas) {
	pad := vg.Points(figPad)
	keyH := f.key.height(c.Size().X - 2*pad)
	area := draw.Crop(c, pad, -pad, pad+keyH, -pad)
	rows := make([][]*plot.Plot, len(f.panels))
	for i, p := range f.panels {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(f.panels), Cols: 1, PadY: vg.Points(14)}
	cs := plot.Align(rows, tiles, area)
	// The height of a data area does not depend on the y ticks, whose
	// labels may change its width: fit the ticks, then align again.
	for i, p := range f.panels {
		fitTicks(p, cs[i][0])
	}
	cs = plot.Align(rows, tiles, area)
	for i := range f.panels {
		panels = append(panels, cs[i][0])
	}
	return panels, draw.Crop(c, pad, -pad, pad, -(c.Size().Y - pad - keyH))
}

// save writes the figure as base.png and base.svg into dir; base is a
// slash-separated path relative to dir, whose directory is created.
func (f *figure) save(dir, base string) (Plot, error) {
	p := Plot{PNG: base + ".png", SVG: base + ".svg"}
	if sub := path.Dir(base); sub != "." {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(sub)), 0o755); err != nil {
			return Plot{}, fmt.Errorf("reports: %w", err)
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(f.w, f.height()), vgimg.UseDPI(pngDPI))
	f.draw(draw.New(img))
	if err := writeTo(filepath.Join(dir, filepath.FromSlash(p.PNG)), pngWriter{img}); err != nil {
		return Plot{}, err
	}
	if err := writeTo(filepath.Join(dir, filepath.FromSlash(p.SVG)), f.svg()); err != nil {
		return Plot{}, err
	}
	return p, nil
}

// svg draws the figure on an SVG canvas.
func (f *figure) svg() *vgsvg.Canvas {
	c := vgsvg.New(f.w, f.height())
	f.draw(draw.New(c))
	return c
}

// addLegend adds a legend entry.
func (f *figure) addLegend(label string, thumbs ...plot.Thumbnailer) {
	f.key.add(label, thumbs...)
}

// pngWriter encodes a canvas as PNG favouring speed over size: plots are
// mostly flat colour and compress well either way.
type pngWriter struct{ c *vgimg.Canvas }

func (w pngWriter) WriteTo(out io.Writer) (int64, error) {
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	cw := &countWriter{w: out}
	err := enc.Encode(cw, w.c.Image())
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeTo(path string, c io.WriterTo) error {
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("reports: rendering %s: %w", path, err)
	}
	if err := WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

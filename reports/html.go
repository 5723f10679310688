package reports

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"io/fs"
	"strings"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"swatch": func(id int) template.CSS { return template.CSS("background:" + cssColor(instanceColor(id))) },
}).Parse(htmlSource))

// WriteHTML writes report.html for s: a self-contained page that opens with
// a line per strategy whose harness saturated (none usually), then
// the verdict (the best and worst strategy on s.KeyMetric and the margin
// between them), then the notes that weaken the measurement, the checked
// expectations, the comparison of strategies, the plots across strategies,
// one section per strategy (its plots and per-instance table), the settings,
// the environment and the experiment file: the sections of the view that
// report.md shows too.
//
// Plots are read from fsys by their file names and embedded: the SVG inline,
// or, for a plot without an SVG, the PNG as a data: URI. A nil fsys leaves
// the plots out. The page loads nothing else: no scripts, no external
// styles, fonts or images. Every string from s is HTML-escaped.
func WriteHTML(w io.Writer, s *Summary, plots []Plot, fsys fs.FS) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	page := htmlPage{view: newView(s, plots)}
	if fsys != nil {
		var err error
		if page.CrossPlots, err = embedPlots(fsys, page.Plots); err != nil {
			return err
		}
		page.StrategyPlots = make([][]htmlPlot, len(page.Strategies))
		for i, sv := range page.Strategies {
			if page.StrategyPlots[i], err = embedPlots(fsys, sv.Plots); err != nil {
				return err
			}
		}
	}
	bw := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(bw, page); err != nil {
		return fmt.Errorf("reports: rendering HTML: %w", err)
	}
	return bw.Flush()
}

// htmlPage is what the template renders: the view, with its plots
// embedded. Every string is escaped by the template, except the typed
// HTML, URL and CSS values made here.
type htmlPage struct {
	*view
	CrossPlots    []htmlPlot
	StrategyPlots [][]htmlPlot // by index of view.Strategies; nil without plots
}

type htmlPlot struct {
	Title string
	SVG   template.HTML
	PNG   template.URL
}

// Class is the cell's CSS classes.
func (c cell) Class() string {
	var cls []string
	for _, on := range []struct {
		set  bool
		name string
	}{{c.Name, "name"}, {c.Num, "num"}, {c.Key, "key"}, {c.Mark != "", c.Mark}} {
		if on.set {
			cls = append(cls, on.name)
		}
	}
	return strings.Join(cls, " ")
}

// Class is the column heading's CSS classes.
func (c column) Class() string {
	return cell{Num: c.Num, Key: c.Key}.Class()
}

// Parts is the cell's text split after the punctuation of strategy names
// ("+", ",", "(", "/"), where a narrow column may break the line.
func (c cell) Parts() []string {
	var parts []string
	rest := c.Text
	for {
		i := strings.IndexAny(rest, "+,(/")
		if i < 0 || i == len(rest)-1 {
			return append(parts, rest)
		}
		parts = append(parts, rest[:i+1])
		rest = rest[i+1:]
	}
}

func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// embedPlots embeds each plot; see embedPlot.
func embedPlots(fsys fs.FS, plots []Plot) ([]htmlPlot, error) {
	var out []htmlPlot
	for _, p := range plots {
		hp, err := embedPlot(fsys, p)
		if err != nil {
			return nil, err
		}
		out = append(out, hp)
	}
	return out, nil
}

// embedPlot reads a plot's SVG (or, without one, its PNG) from fsys.
func embedPlot(fsys fs.FS, p Plot) (htmlPlot, error) {
	hp := htmlPlot{Title: p.Title}
	if p.SVG != "" {
		b, err := fs.ReadFile(fsys, p.SVG)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot: %w", err)
		}
		svg, err := inlineSVG(b)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot %s: %w", p.SVG, err)
		}
		hp.SVG = svg
		return hp, nil
	}
	if p.PNG != "" {
		b, err := fs.ReadFile(fsys, p.PNG)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot: %w", err)
		}
		hp.PNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	}
	return hp, nil
}

// inlineSVG returns an SVG document written by RenderPlots as an element
// to place in HTML: the XML declaration and comments before the <svg>
// element are dropped. It rejects documents with scripts, event handlers
// or references to external resources, which the plots never contain.
func inlineSVG(b []byte) (template.HTML, error) {
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("no <svg> element")
	}
	b = bytes.TrimSpace(b[i:])
	low := bytes.ToLower(b)
	for _, bad := range []string{"<script", "<foreignobject", "href=\"http", "href='http"} {
		if bytes.Contains(low, []byte(bad)) {
			return "", fmt.Errorf("SVG contains %q", bad)
		}
	}
	if hasEventAttr(low) {
		return "", fmt.Errorf("event handler attribute in SVG")
	}
	return template.HTML(b), nil
}

// hasEventAttr reports whether an SVG's markup (lower-cased) has an
// attribute named on...=, outside text content.
func hasEventAttr(low []byte) bool {
	inTag := false
	for i := 0; i < len(low); i++ {
		switch c := low[i]; {
		case c == '<':
			inTag = true
		case c == '>':
			inTag = false
		case inTag && (c == ' ' || c == '\t' || c == '\n') && bytes.HasPrefix(low[i+1:], []byte("on")):
			j := i + 3
			for j < len(low) && low[j] >= 'a' && low[j] <= 'z' {
				j++
			}
			if j < len(low) && low[j] == '=' {
				return true
			}
		}
	}
	return false
}

package reports

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The summaries these tests render are real runs, written by the harness
// and gzipped:
//
//   - fast-fail-process: lbchaos run fast-fail --backends process
//     --duration 5s --rate 1000 (all eleven strategies, the proxies
//     included; on a busy two-core machine, so the numbers describe it, but
//     the plots are what is tested here);
//   - slow-instance-sim: lbchaos run slow-instance --engine sim.
//
// Regenerate them after a change to what the collector records.
var browserRuns = []string{"fast-fail-process", "slow-instance-sim"}

func loadTestSummary(t *testing.T, name string) *Summary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".summary.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadJSON(zr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// plotProbe is appended to a copy of report.html: it opens every collapsed
// section and writes, as JSON in <pre id="probe">, the rendered geometry of
// every inline SVG, of its texts and of its small paths (legend
// thumbnails, glyphs, ticks) with their computed colours.
// plotsOnlyCSS hides everything of report.html but its cross-strategy
// plots (the #plots section).
const plotsOnlyCSS = `<style>body *:not(:has(#plots)):not(#plots):not(#plots *) { display: none !important; }</style>`

const plotProbe = `<script>
(function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var rect = function (e) { var b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  var out = {docW: document.documentElement.clientWidth, svgs: []};
  document.querySelectorAll('svg').forEach(function (svg) {
    var o = {r: rect(svg), texts: [], paths: []};
    svg.querySelectorAll('text').forEach(function (t) { o.texts.push({s: t.textContent, r: rect(t)}); });
    svg.querySelectorAll('path').forEach(function (p) {
      var b = p.getBoundingClientRect();
      if (b.width > 60 || b.height > 30) return;
      var cs = getComputedStyle(p);
      o.paths.push({stroke: cs.stroke, fill: cs.fill, dash: cs.strokeDasharray, r: rect(p)});
    });
    out.svgs.push(o);
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

type probeSVG struct {
	R     [4]float64 `json:"r"` // left, top, right, bottom in CSS pixels
	Texts []struct {
		S string     `json:"s"`
		R [4]float64 `json:"r"`
	} `json:"texts"`
	Paths []struct {
		Stroke, Fill, Dash string
		R                  [4]float64 `json:"r"`
	} `json:"paths"`
}

type probeResult struct {
	DocW float64    `json:"docW"`
	SVGs []probeSVG `json:"svgs"`
}

var probeJSON = regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`)

// TestPlotsInBrowser renders report.html of real fast-fail (eleven
// strategies, long proxy names) and slow-instance runs in headless
// Chromium, screenshots it, and checks in the browser's own layout that
// no text of any plot (legend entries, titles, ticks) lies outside its
// SVG's box or the page, that the cross-strategy plots list every strategy
// in their legend, that no two strategies share a colour there, and that
// a strategy has the same colour in every plot of the run.
func TestPlotsInBrowser(t *testing.T) {
	bin := findChromium(t)
	for _, run := range browserRuns {
		t.Run(run, func(t *testing.T) {
			s := loadTestSummary(t, run)
			dir := t.TempDir()
			if err := WriteAll(dir, s); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.LastIndex(page, []byte("</body>"))
			if i < 0 {
				t.Fatal("report.html has no </body>")
			}
			probe := filepath.Join(dir, "probe.html")
			if err := os.WriteFile(probe, append(append(page[:i:i], plotProbe...), page[i:]...), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, stderr := runChromium(t, bin, "file://"+probe, "--dump-dom")
			checkBrowserLog(t, "dump-dom", stderr)
			m := probeJSON.FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("the probe wrote nothing; stderr:\n%s", stderr)
			}
			var res probeResult
			if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &res); err != nil {
				t.Fatal(err)
			}
			checkPlotGeometry(t, s, &res)

			// A screenshot of the cross-strategy plots alone (the page
			// without everything else), in which every strategy's colour
			// must show.
			only := filepath.Join(dir, "plots-only.html")
			j := bytes.Index(page, []byte("</head>"))
			if j < 0 {
				t.Fatal("report.html has no </head>")
			}
			if err := os.WriteFile(only, append(append(page[:j:j], plotsOnlyCSS...), page[j:]...), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(t.TempDir(), "shot.png")
			_, stderr = runChromium(t, bin, "file://"+only, "--screenshot="+shot, "--hide-scrollbars", "--window-size=1280,3200")
			checkBrowserLog(t, "screenshot", stderr)
			b, err := os.ReadFile(shot)
			if err != nil {
				t.Fatalf("no screenshot: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("screenshot is not a PNG: %v", err)
			}
			checkColoursShown(t, s, img)
			if *keep != "" {
				for _, name := range []string{"percentiles.png", "share.png", "success.png", "errors-least-inflight.png", "latency-least-inflight.png"} {
					if err := copyFile(filepath.Join(dir, name), filepath.Join(*keep, run+"-"+name)); err != nil {
						t.Error(err)
					}
				}
				if err := os.WriteFile(filepath.Join(*keep, run+"-screenshot.png"), b, 0o644); err != nil {
					t.Error(err)
				}
				if err := copyFile(filepath.Join(dir, HTMLFile), filepath.Join(*keep, run+"-report.html")); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// checkColoursShown checks that every strategy's colour covers a fair
// number of the screenshot's pixels (its bar in the success plot alone is
// thousands).
func checkColoursShown(t *testing.T, s *Summary, img image.Image) {
	t.Helper()
	count := map[color.RGBA]int{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	styles := summaryStyles(s)
	for i, st := range s.Strategies {
		c := styles[i].Color
		if n := count[c]; n < 500 {
			t.Errorf("screenshot has %d pixels of %q's colour %v, want its bars and lines", n, st.Name, c)
		}
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// checkPlotGeometry checks the probe's measurements (see TestPlotsInBrowser).
func checkPlotGeometry(t *testing.T, s *Summary, res *probeResult) {
	t.Helper()
	const eps = 0.5 // px
	if len(res.SVGs) == 0 {
		t.Fatal("no inline SVG in the page")
	}
	var legendSVGs []int // the cross-strategy plots with a strategy legend
	for i, svg := range res.SVGs {
		if svg.R[2]-svg.R[0] < 100 || svg.R[3]-svg.R[1] < 100 {
			t.Errorf("plot %d is %v px: not laid out (collapsed?)", i, svg.R)
			continue
		}
		if svg.R[2] > res.DocW+eps {
			t.Errorf("plot %d reaches %.0f px, past the page's %.0f", i, svg.R[2], res.DocW)
		}
		title := ""
		for _, tx := range svg.Texts {
			if title == "" {
				title = tx.S
			}
			if tx.R[0] < svg.R[0]-eps || tx.R[1] < svg.R[1]-eps || tx.R[2] > svg.R[2]+eps || tx.R[3] > svg.R[3]+eps {
				t.Errorf("plot %q: text %q at %v lies outside the plot's box %v (clipped)", title, tx.S, tx.R, svg.R)
			}
		}
		if strings.HasPrefix(title, "Latency by percentile") || strings.HasPrefix(title, "Share of requests") {
			legendSVGs = append(legendSVGs, i)
		}
	}
	if len(legendSVGs) != 2 {
		t.Fatalf("found %d of the percentile and share plots, want 2", len(legendSVGs))
	}
	colourOf := map[string]string{} // strategy -> colour, across plots
	for _, i := range legendSVGs {
		entries := legendEntries(&res.SVGs[i])
		byColour := map[string]string{}
		for _, st := range s.Strategies {
			key := strings.ReplaceAll(st.Name, " ", "")
			c, ok := entries[key]
			if !ok {
				t.Errorf("plot %q: no legend entry with a thumbnail for %q (entries: %v)", res.SVGs[i].Texts[0].S, st.Name, keys(entries))
				continue
			}
			if other, dup := byColour[c]; dup {
				t.Errorf("plot %q: %q and %q share the colour %s", res.SVGs[i].Texts[0].S, other, st.Name, c)
			}
			byColour[c] = st.Name
			if prev, seen := colourOf[st.Name]; seen && prev != c {
				t.Errorf("%q is %s in one plot and %s in another", st.Name, prev, c)
			}
			colourOf[st.Name] = c
		}
	}
	if len(colourOf) != len(s.Strategies) {
		t.Errorf("%d strategies have a colour, want %d", len(colourOf), len(s.Strategies))
	}
}

// legendEntries reads a plot's legend from its rendered geometry: a text
// with a small coloured path ending just left of it starts an entry, and
// the texts right below it at the same x, without one, continue its
// (wrapped) label. It returns each label, spaces removed, with the most
// common colour among its thumbnail's paths.
func legendEntries(svg *probeSVG) map[string]string {
	w := svg.R[2] - svg.R[0]
	out := map[string]string{}
	type entry struct {
		x, bottom float64
		label     string
		colour    string
	}
	var open *entry
	for _, tx := range svg.Texts {
		h := tx.R[3] - tx.R[1]
		counts := map[string]int{}
		for _, p := range svg.Paths {
			if p.R[2] > tx.R[0]+1 || p.R[2] < tx.R[0]-0.05*w {
				continue
			}
			if mid := (p.R[1] + p.R[3]) / 2; mid < tx.R[1]-h/2 || mid > tx.R[3]+h/2 {
				continue
			}
			for _, c := range []string{p.Stroke, p.Fill} {
				if c != "" && c != "none" && c != "rgb(255, 255, 255)" {
					counts[c]++
				}
			}
		}
		if len(counts) > 0 {
			if open != nil {
				out[open.label] = open.colour
			}
			best, n := "", 0
			for c, k := range counts {
				if k > n || k == n && c < best {
					best, n = c, k
				}
			}
			open = &entry{x: tx.R[0], bottom: tx.R[3], label: strings.ReplaceAll(tx.S, " ", ""), colour: best}
			continue
		}
		if open != nil && abs(tx.R[0]-open.x) < 1 && tx.R[1] >= open.bottom-h/2 && tx.R[1] < open.bottom+h {
			open.label += strings.ReplaceAll(tx.S, " ", "")
			open.bottom = tx.R[3]
			continue
		}
		if open != nil {
			out[open.label] = open.colour
			open = nil
		}
	}
	if open != nil {
		out[open.label] = open.colour
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}

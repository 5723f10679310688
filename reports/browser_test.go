package reports

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// browserTimeout bounds each headless browser run.
const browserTimeout = 60 * time.Second

// findChromium returns the path of a Chromium binary on PATH. When there is
// none the test is skipped, except under CI=true, where a missing browser
// is a failure: CI installs one.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium or chromium-browser on PATH; CI must install one to test report.html")
	}
	t.Skip("no chromium or chromium-browser on PATH; install one to test report.html in a browser")
	return ""
}

// runChromium runs a headless Chromium with a fresh profile on url with the
// given extra flags, and returns its stdout and stderr.
func runChromium(t *testing.T, bin, url string, flags ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0",
		"--window-size=1280,2000",
	}, flags...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (timeout %v)\nstderr:\n%s", bin, strings.Join(args, " "), err, browserTimeout, errb.String())
	}
	return out.String(), errb.String()
}

// consoleErrors are the lines of Chromium's log that report something from
// the page: any console message (headless Chromium logs console.error at
// INFO level, "INFO:CONSOLE:1]" or "INFO:CONSOLE(1)]", so levels cannot be
// told apart, and report.html has no script that could log), an uncaught
// exception, or a resource that failed to load.
var consoleErrors = regexp.MustCompile(`(?m)^.*(:CONSOLE[:(]|Uncaught|Failed to load resource|net::ERR_).*$`)

// TestReportInBrowser loads a written report.html in headless Chromium: the
// page must render to a non-trivial screenshot, its DOM must carry the
// verdict and embedded plots, and the browser must log no page errors.
func TestReportInBrowser(t *testing.T) {
	bin := findChromium(t)
	t.Parallel()

	s := richSample()
	// A plain strategy, without a timeline to keep rendering quick under
	// -race, and one with every per-strategy plot.
	plain := s.Strategies[0]
	plain.Timeline = nil
	s.Strategies = []Strategy{plain, s.Strategies[2]}
	dir := t.TempDir()
	if err := WriteAll(dir, s); err != nil {
		t.Fatal(err)
	}
	svgs, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	inDirs, _ := filepath.Glob(filepath.Join(dir, "*", "*.svg")) // per strategy
	svgs = append(svgs, inDirs...)
	if err != nil || len(svgs) == 0 {
		t.Fatalf("no plots written (%v)", err)
	}
	url := "file://" + filepath.Join(dir, HTMLFile)

	shot := filepath.Join(t.TempDir(), "shot.png")
	_, stderr := runChromium(t, bin, url, "--screenshot="+shot, "--hide-scrollbars")
	checkBrowserLog(t, "screenshot", stderr)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\nstderr:\n%s", err, stderr)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 1000 || r.Dy() < 1500 {
		t.Errorf("screenshot is %v, want the 1280×2000 window", r)
	}
	if colours := distinctColours(img, 5000); colours < 20 {
		t.Errorf("screenshot has %d distinct colours in a sample; the page looks blank", colours)
	}
	if *keep != "" {
		if err := os.WriteFile(filepath.Join(*keep, "screenshot.png"), b, 0o644); err != nil {
			t.Error(err)
		}
	}

	dom, stderr := runChromium(t, bin, url, "--dump-dom")
	checkBrowserLog(t, "dump-dom", stderr)
	dom = strings.ReplaceAll(dom, "&#43;", "+")
	for _, want := range []string{
		`<section class="verdict" id="verdict">`,
		"Best on failed requests:",
		`<strong class="best-name">least-inflight+eject(consecutive=5,duration=5s)</strong>`,
		`<strong class="worst-name">round-robin</strong>`,
		`<td class="status">FAILED</td>`,
		"<pre class=\"file\">name: fast-fail",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if n := strings.Count(dom, "<svg "); n != len(svgs) {
		t.Errorf("rendered DOM has %d <svg> elements, want one per plot (%d)", n, len(svgs))
	}
	for _, m := range imgSrc.FindAllStringSubmatch(dom, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("rendered <img> loads %q, want a data: URI", m[1])
		}
	}
	if m := extRefs.FindString(dom); m != "" {
		t.Errorf("rendered DOM refers to something outside the page: %q", m)
	}
}

func checkBrowserLog(t *testing.T, run, stderr string) {
	t.Helper()
	for _, line := range consoleErrors.FindAllString(stderr, -1) {
		t.Errorf("%s: browser reported a page error: %s", run, line)
	}
}

// distinctColours counts the colours among about n pixels sampled evenly
// from img.
func distinctColours(img image.Image, n int) int {
	r := img.Bounds()
	step := max(1, int(math.Sqrt(float64(r.Dx()*r.Dy())/float64(n))))
	seen := map[color.RGBA]bool{}
	for y := r.Min.Y; y < r.Max.Y; y += step {
		for x := r.Min.X; x < r.Max.X; x += step {
			seen[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	return len(seen)
}

// TestBrowserLogCheck makes sure the log check of TestReportInBrowser sees
// page errors in this Chromium's log format.
func TestBrowserLogCheck(t *testing.T) {
	bin := findChromium(t)
	t.Parallel()
	page := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><p>x</p><script>console.error("logged error"); notDefined();</script>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := runChromium(t, bin, "file://"+page, "--dump-dom")
	got := strings.Join(consoleErrors.FindAllString(stderr, -1), "\n")
	for _, want := range []string{"logged error", "Uncaught ReferenceError"} {
		if !strings.Contains(got, want) {
			t.Errorf("log check missed %q; browser stderr:\n%s", want, stderr)
		}
	}
}

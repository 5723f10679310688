package reports

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var keep = flag.String("keep", "", "also write the sample report into this directory, for looking at")

func TestWriteAll(t *testing.T) {
	t.Parallel()
	s := richSample()
	if *keep == "" {
		// Rendering is slow under -race: one strategy with every
		// per-strategy plot; TestRenderPlots covers the rest.
		s.Strategies = s.Strategies[2:]
	}
	dir := filepath.Join(t.TempDir(), "out", "report")
	if *keep != "" {
		dir = *keep
	}
	if err := WriteAll(dir, s); err != nil {
		t.Fatal(err)
	}
	const ej = "least-inflight-eject-consecutive-5-duration-5s"
	for _, name := range []string{SummaryFile, MarkdownFile, HTMLFile, "share.png", ej + "/latency.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"(success.png)", "(percentiles.png)", "(" + ej + "/rate.png)", "(" + ej + "/health.png)"} {
		if !bytes.Contains(md, []byte(link)) {
			t.Errorf("report.md does not link %s", link)
		}
	}

	b, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	checkSelfContained(t, page)
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	inDirs, _ := filepath.Glob(filepath.Join(dir, "*", "*.svg"))
	svgs = append(svgs, inDirs...)
	if n := strings.Count(page, "<svg "); n != len(svgs) || n == 0 {
		t.Errorf("report.html inlines %d SVGs, want one per plot file (%d)", n, len(svgs))
	}
	for _, title := range []string{"ejections by instance over time", "requests per second per instance over time", "Latency by percentile", "Success rate by strategy"} {
		if !strings.Contains(page, "<figcaption>"+title) && !strings.Contains(page, title+"</figcaption>") {
			t.Errorf("report.html has no plot %q", title)
		}
	}
}

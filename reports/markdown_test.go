package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestMarkdownPlotsNeverBroken: report.md pasted into a pull-request
// comment or a CI job summary keeps working. Without a plots URL its
// plots are links to the files beside it and it says so, never a
// relative image; with one, they are images from there.
func TestMarkdownPlotsNeverBroken(t *testing.T) {
	s := richSample()
	plots := []Plot{{Title: "Request share", PNG: "share.png", SVG: "share.svg"}, {Title: "p99", PNG: "rr/latency.png", SVG: "rr/latency.svg", Strategy: "round-robin"}}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, s, plots); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.Contains(md, "![") {
		t.Errorf("without a plots URL report.md embeds an image, which breaks when pasted:\n%s", md)
	}
	for _, want := range []string{"[Request share](share.png) · [SVG](share.svg)", "beside report.md", "--plots-url URL"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteMarkdownAt(&b, s, plots, "https://ci.example/artifacts/run-7/"); err != nil {
		t.Fatal(err)
	}
	md = b.String()
	for _, want := range []string{"![Request share](https://ci.example/artifacts/run-7/share.png)", "[Request share (SVG)](https://ci.example/artifacts/run-7/share.svg)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md with a plots URL lacks %q", want)
		}
	}
	if strings.Contains(md, "](share.png)") || strings.Contains(md, "beside report.md") {
		t.Error("report.md with a plots URL still links the files beside it")
	}
}

package reports

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var keep = flag.String("keep", "", "also write the sample report into this directory, for looking at")

func TestWriteAll(t *testing.T) {
	t.Parallel()
	s := sampleSummary()
	if *keep == "" {
		s.Strategies = s.Strategies[:1] // rendering is slow under -race; TestRenderPlots covers the rest
	}
	dir := filepath.Join(t.TempDir(), "out", "report")
	if *keep != "" {
		dir = *keep
	}
	if err := WriteAll(dir, s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{SummaryFile, MarkdownFile, "share.png", "latency-round-robin.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
		}
	}
}

package reports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// File names WriteAll writes into a report directory.
const (
	SummaryFile  = "summary.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// WriteAll writes summary.json, the plots, report.md and report.html into
// dir, creating dir if needed. summary.json is written first, so the measurement survives
// a failure to render. Errors name the file that could not be written.
func WriteAll(dir string, s *Summary) error { return WriteAllAt(dir, s, "") }

// WriteAllAt is WriteAll with report.md's plots embedded from plotsURL,
// the address dir is published at (see WriteMarkdownAt); "" links them.
func WriteAllAt(dir string, s *Summary, plotsURL string) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: creating report directory: %w", err)
	}
	if err := writeFile(filepath.Join(dir, SummaryFile), func(b *bytes.Buffer) error { return WriteJSON(b, s) }); err != nil {
		return err
	}
	plots, err := RenderPlots(dir, s)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, MarkdownFile), func(b *bytes.Buffer) error { return WriteMarkdownAt(b, s, plots, plotsURL) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, HTMLFile), func(b *bytes.Buffer) error { return WriteHTML(b, s, plots, os.DirFS(dir)) })
}

// writeFile renders into memory and writes path only when rendering
// worked, atomically: a failure leaves the previous file or none.
func writeFile(path string, render func(*bytes.Buffer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	if err := WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

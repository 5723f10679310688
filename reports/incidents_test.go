package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIncidentsShown: a strategy's crash, panic and proxy-exit events
// appear in report.md and report.html as lines with their times, each
// with its log, are not counted as ejections, and are marked in the time
// plots.
func TestIncidentsShown(t *testing.T) {
	s := sampleSummary()
	st := &s.Strategies[0]
	st.Events = []Event{
		{TimeS: 4.2, Instance: 3, Kind: EventCrash, Detail: "its container exited with code 137 without a scheduled kill",
			Log: []string{"lbchaos serve: faultyserver: instance 3 listening on [::]:8080", "a line with <markup> & ```fences```"}},
		{TimeS: 6.5, Instance: 1, Kind: EventPanic, Detail: "panic in handler of GET /: nil map; the request was aborted"},
		{TimeS: 9.25, Instance: ProxyInstance, Kind: EventProxyExit, Detail: "nginx (pid 42) exited: signal: killed"},
	}

	dir := t.TempDir()
	if err := WriteAll(dir, s); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- **instance 3 crashed at 4.20 s: its container exited with code 137 without a scheduled kill**\n\n  ```\n  lbchaos serve: faultyserver: instance 3 listening on [::]:8080\n  a line with <markup> & '''fences'''\n  ```\n",
		"- **instance 1 panicked at 6.50 s: panic in handler of GET /: nil map; the request was aborted**\n",
		"- **the proxy exited at 9.25 s: nginx (pid 42) exited: signal: killed**\n",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(md), "0 ejection and 0 re-admission events") {
		t.Errorf("report.md counts the crashes as a strategy's events")
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<li><strong>instance 3 crashed at 4.20 s: its container exited with code 137 without a scheduled kill</strong><pre class=\"file\">lbchaos serve",
		"a line with &lt;markup&gt; &amp; ```fences```\n</pre>",
		"the proxy exited at 9.25 s",
	} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	ts := newTimeSeries(s, st)
	if len(ts.crashes) != 2 || ts.crashes[0].Instance != 3 || ts.crashes[1].Instance != ProxyInstance {
		t.Errorf("time plots mark %+v, want the crash and the proxy's exit", ts.crashes)
	}
	if got := crashLegend(ts.crashes); got != "crash, proxy exit" {
		t.Errorf("legend %q", got)
	}
	var without bytes.Buffer
	s2 := sampleSummary()
	if err := WriteMarkdown(&without, s2, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(without.String(), "crashed at") {
		t.Errorf("a report without crashes mentions one")
	}
}

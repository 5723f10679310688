package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// JUnit XML, in the common form CI test-report tools read (the Ant/Jenkins
// schema): <testsuites> of <testsuite> of <testcase>, a failed case with a
// <failure>, a skipped one with <skipped>. One case per expectation.

// JUnitSuites is the document's root element.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one run's expectations.
type JUnitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one expectation: Classname the experiment, Name the
// strategy, metric and condition.
type JUnitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitFailure `xml:"failure"`
	Skipped   *JUnitSkipped `xml:"skipped"`
}

// JUnitFailure says what the run got against what the expectation wants.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped says why an expectation was not checked.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnitRun is what a suite is made of: a run's (or repeated run's)
// expectations and how to name them.
type JUnitRun struct {
	// Suite names the suite, e.g. "fast-fail (sim)".
	Suite      string
	Experiment string
	Results    []ExpectationResult
	// Advisory: the run overrode the file's load; a failed expectation is
	// reported as skipped, with what it got.
	Advisory bool
	// Over names what Got is, in failure messages, e.g. "the median of 3
	// repetitions"; empty for a single run.
	Over string
}

// NewJUnit builds the document of runs, one suite each.
func NewJUnit(name string, runs []JUnitRun) *JUnitSuites {
	doc := &JUnitSuites{Name: name}
	for _, r := range runs {
		s := JUnitSuite{Name: r.Suite}
		for _, e := range r.Results {
			want := e.Op + " " + strconv.FormatFloat(e.Want, 'g', -1, 64)
			c := JUnitCase{Classname: r.Experiment, Name: fmt.Sprintf("%s: %s %s", e.Strategy, e.Metric, want), Time: "0"}
			got := "got " + expectNumber(e.Got)
			if r.Over != "" {
				got += " (" + r.Over + ")"
			}
			switch {
			case e.Missing:
				c.Skipped = &JUnitSkipped{Message: "strategy " + e.Strategy + " was not run, or the run could not measure " + e.Metric}
			case e.Passed:
			case r.Advisory:
				c.Skipped = &JUnitSkipped{Message: fmt.Sprintf("advisory (the run overrode the file's duration or rate): %s %s, want %s", e.Metric, got, want)}
			default:
				msg := fmt.Sprintf("%s %s, want %s", e.Metric, got, want)
				c.Failure = &JUnitFailure{Message: msg, Type: "expectation", Text: e.Strategy + ": " + msg}
			}
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
			s.Cases = append(s.Cases, c)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	return doc
}

// WriteJUnit writes doc as an XML document.
func WriteJUnit(w io.Writer, doc *JUnitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

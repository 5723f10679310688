package reports

import "time"

// virtualTime reports whether s was measured in simulated time: its
// Started is the simulator's epoch, not a moment of the run, so a report
// says "virtual time" rather than show a date in 1970.
func virtualTime(s *Summary) bool { return s.Engine == "sim" }

// startedText is when s's run started, as reports show it: RFC 3339 in
// UTC, "virtual time" for a simulation, "" when unknown.
func startedText(s *Summary) string {
	switch {
	case virtualTime(s):
		return "virtual time"
	case s.Started.IsZero():
		return ""
	}
	return s.Started.UTC().Format(time.RFC3339)
}

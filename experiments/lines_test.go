package experiments

import (
	"regexp"
	"strings"
)

var fileLine = regexp.MustCompile(`(\.yaml: )line \d+: `)

// msg is err's message for tests that pin a message but not its line:
// the "line N: " after the file's name is dropped unless want has one
// there. TestProblemLines pins lines.
func msg(err error, want string) string {
	if err == nil {
		return ""
	}
	if fileLine.MatchString(want) || strings.HasPrefix(want, "line ") {
		return err.Error()
	}
	return fileLine.ReplaceAllString(err.Error(), "$1")
}

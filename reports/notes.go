package reports

import "strings"

// MergeNotes merges notes that say the same of different strategies into
// one line naming them all: "a: x" and "b: x" become "a, b: x", where the
// note's first ": " ends the strategy's name (a name has no blank). It
// keeps the order of the first of each group and leaves other notes as
// they are.
func MergeNotes(notes []string) []string {
	if len(notes) == 0 {
		return nil
	}
	type group struct {
		names []string
		text  string
	}
	var out []*group
	byText := map[string]*group{}
	for _, n := range notes {
		name, text, ok := strings.Cut(n, ": ")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			out = append(out, &group{text: n})
			continue
		}
		if g := byText[text]; g != nil {
			g.names = append(g.names, name)
			continue
		}
		g := &group{names: []string{name}, text: text}
		byText[text] = g
		out = append(out, g)
	}
	lines := make([]string, len(out))
	for i, g := range out {
		if len(g.names) == 0 {
			lines[i] = g.text
		} else {
			lines[i] = strings.Join(g.names, ", ") + ": " + g.text
		}
	}
	return lines
}

package experiments

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Suggest returns the candidate word is most likely a misspelling of, or
// "" when none is close: the same word in another case or with '_' for
// '-' ("least_inflight", "P2C"), or one within an edit distance of about a
// third of its length ("instanses", "fastfail", "runn"). Ties go to the
// earlier candidate, so callers list the likelier ones first.
func Suggest(word string, candidates []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	w := norm(word)
	if w == "" {
		return ""
	}
	best, bestD := "", -1
	for _, c := range candidates {
		if c == word {
			continue
		}
		nc := norm(c)
		if nc == w || strings.ReplaceAll(nc, "-", "") == strings.ReplaceAll(w, "-", "") {
			return c
		}
		if p := commonPrefix(w, nc); p >= 4 && p >= min(len(w), len(nc))-1 {
			return c // --strategy for --strategies
		}
		d := editDistance(w, nc)
		limit := max(1, min(utf8.RuneCountInString(w), utf8.RuneCountInString(nc))/3)
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean is Suggest as the end of a message: `; did you mean "x"?`,
// or "" when nothing is close.
func didYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return "; did you mean " + strconv.Quote(s) + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// commonPrefix is the length in bytes of the prefix a and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

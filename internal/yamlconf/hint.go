package yamlconf

import (
	"iter"
	"strings"
)

// suggest names the known key closest to an unknown one when the unknown
// one is a likely misspelling of it, " (did you mean burst?)", and is ""
// otherwise. A likely misspelling is at most two edits away (a swap of two
// neighbouring letters is one edit) and shares more letters with the key
// than it changes; of two equally close keys the first in order is named,
// so that the message does not depend on map order.
func suggest(name string, fields map[string]int) string {
	best := Nearest(name, func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	})
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// Nearest returns the candidate closest to name when name is a likely
// misspelling of it, and "" otherwise: at most two edits away (a swap of
// two neighbouring letters is one edit), with more letters kept than
// changed; of two equally close candidates, the first in byte order.
// Case is not counted, except that a name that differs from a candidate
// in case alone is one edit from it (AWS, MAX_RPS: aws, max_rps). The
// SDK integrations use it for the "did you mean" of the names they check.
func Nearest(name string, candidates iter.Seq[string]) string {
	best, bestDist := "", maxEdits+1
	lower := strings.ToLower(name)
	for k := range candidates {
		d := distance(lower, strings.ToLower(k))
		if d == 0 && k != name {
			d = 1
		}
		if d < bestDist || d == bestDist && k < best {
			best, bestDist = k, d
		}
	}
	if best == "" || bestDist > maxEdits || bestDist >= len(name) {
		return ""
	}
	return best
}

// maxEdits is the farthest a key may be from the unknown one to be named.
const maxEdits = 2

// distance is the optimal string alignment distance of a and b (the
// Damerau-Levenshtein distance where no substring is edited twice), capped
// at maxEdits+1: enough to rank near keys, cheap for far ones.
func distance(a, b string) int {
	if a == b {
		return 0
	}
	if d := len(a) - len(b); d > maxEdits || -d > maxEdits {
		return maxEdits + 1
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], maxEdits+1)
}

package doctest

import (
	"regexp"
	"strings"
)

// A Fenced is a fenced block of a Markdown text: the line of its first
// line (counted from 1) and its text, each line ended by a newline. The
// zero Fenced is an empty block at no line. A Fenced is a value, safe to
// use from several goroutines at once.
type Fenced struct {
	Line int
	Text string
}

// Blocks returns each fenced block of the Markdown text md whose info
// string is lang: "yaml" for the ```yaml blocks, "" for the blocks that
// have none.
func Blocks(md, lang string) []Fenced {
	var out []Fenced
	var cur *strings.Builder
	in, start := false, 0
	for i, line := range strings.Split(md, "\n") {
		fence, isFence := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case !in && isFence:
			in, start = true, i+2
			if fence == lang {
				cur = &strings.Builder{}
			}
		case in && isFence && fence == "":
			if cur != nil {
				out = append(out, Fenced{start, cur.String()})
			}
			in, cur = false, nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	return out
}

// CodeSpans returns the text of each code span of the Markdown text md
// outside its fenced blocks, a span broken over lines read as the one
// line it renders as: each line break, with the indentation after it, is
// a space.
func CodeSpans(md string) []string {
	var prose strings.Builder
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			prose.WriteString("\n")
			continue
		}
		if !in {
			prose.WriteString(line)
			prose.WriteString("\n")
		}
	}
	var spans []string
	for _, m := range codeSpan.FindAllStringSubmatch(prose.String(), -1) {
		spans = append(spans, lineBreak.ReplaceAllString(m[1], " "))
	}
	return spans
}

var (
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	lineBreak = regexp.MustCompile(`\s*\n\s*`)
)

// Quotes reports whether one of lines is the line a document quotes,
// in which "..." stands for any text left out: the quote's words in
// order, the first at the line's start and the last at its end.
func Quotes(quote string, lines []string) bool {
	parts := strings.Split(quote, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// Beginning returns the spans (as CodeSpans returns them) that begin with
// prefix: the quotes of a document whose text a test finds by their first
// words.
func Beginning(spans []string, prefix string) []string {
	var out []string
	for _, s := range spans {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

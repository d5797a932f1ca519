package env

import (
	"regexp"
	"strings"
)

// integerRE matches an integer, with or without thousands separators (1,234,567).
var integerRE = regexp.MustCompile(`-?\d{1,3}(?:,\d{3})+|-?\d+`)

// lastInteger returns the last integer of text outside thinking, separators removed, and
// whether there is one.
func lastInteger(text string) (string, bool) {
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		text = text[i+len("</think>"):]
	}
	all := integerRE.FindAllString(text, -1)
	if len(all) == 0 {
		return "", false
	}
	return strings.ReplaceAll(all[len(all)-1], ",", ""), true
}

package env

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzEvaluate checks, on any text, that evaluation does not panic, that an error names a
// byte within the text, and that a value survives being parenthesised, negated twice and
// written back.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"1 + 2 * 3", "(1 + 2) * 3", "7 / 2", "-3 * -(2 + 1)", "1 / (2 - 2)", "2 + * 3", "(((1",
		"12345678901234567890 * 98765432109876543210", "1 2", "\t4\n/\n2", "10 - 4 - 3", "٣ + 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err != nil {
			var at int
			if n, _ := fmt.Sscanf(err.Error(), "at byte %d:", &at); n == 1 && (at < 0 || at > len(expr)) {
				t.Fatalf("%q: error %v names a byte outside the text", expr, err)
			}
			return
		}
		if len(expr) > maxExprLen-8 {
			return
		}
		for _, again := range []string{"(" + expr + ")", "-(-(" + expr + "))", formatRat(v)} {
			if strings.Contains(again, "/") && !strings.Contains(expr, "/") {
				t.Fatalf("%q = %s: a fraction without a division", expr, formatRat(v))
			}
			w, err := evaluate(again)
			if err != nil || w.Cmp(v) != 0 {
				t.Fatalf("%q = %s, but %q = %v, %v", expr, formatRat(v), again, w, err)
			}
		}
	})
}

package env

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	for expr, want := range map[string]string{
		"1 + 2 * 3":     "7",
		"(1 + 2) * 3":   "9",
		"2 * 3 + 4 * 5": "26",
		"10 - 4 - 3":    "3", // left to right
		"100 / 10 / 5":  "2",
		"7 / 2":         "7/2", // exact, not 3
		"6 / 4 * 2":     "3",
		"-3 * -(2 + 1)": "9",
		"+-+5":          "-5",
		" ( ( 42 ) ) ":  "42",
		"12345678901234567890 * 98765432109876543210": "1219326311370217952237463801111263526900",
		"99999999999999999999999999 + 1":              "100000000000000000000000000",
		"0007 - 10":                                   "-3",
	} {
		v, err := evaluate(expr)
		if err != nil {
			t.Errorf("%q: %v", expr, err)
			continue
		}
		if got := formatRat(v); got != want {
			t.Errorf("%q = %s, want %s", expr, got, want)
		}
	}
}

func TestFaultEvaluate(t *testing.T) {
	for expr, want := range map[string]string{
		"1 / 0":                         "at byte 2: division by zero",
		"1 / (2 - 2)":                   "at byte 2: division by zero",
		"":                              "at byte 0: the expression ends where a number is wanted",
		"2 +":                           "at byte 3: the expression ends where a number is wanted",
		"2 + * 3":                       `at byte 4: unexpected '*' where a number is wanted`,
		"(1 + 2":                        "at byte 6: want )",
		"1 + 2)":                        `at byte 5: unexpected ')'`,
		"1.5 * 2":                       `at byte 1: unexpected '.'`,
		"2 ** 3":                        `at byte 3: unexpected '*' where a number is wanted`,
		"import os":                     `at byte 0: unexpected 'i' where a number is wanted`,
		"1 2":                           `at byte 2: unexpected '2'`,
		strings.Repeat("(", 100) + "1":  "nested deeper than 64",
		strings.Repeat("-", 100) + "1":  "nested deeper than 64",
		strings.Repeat("1+", 600) + "1": "expression longer than 1024 bytes",
	} {
		if _, err := evaluate(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: error %v, want one containing %q", expr, err, want)
		}
	}
}

package reward

import "testing"

// FuzzParseReply: any line from a reward program gives exactly the rewards asked for, or an
// error quoting it.
func FuzzParseReply(f *testing.F) {
	f.Add(`{"rewards": [1, 0.5]}`, 2)
	f.Add(`{"rewards": [NaN]}`, 1)
	f.Add(`{"rewards": null}`, 0)
	f.Add(`{"id": 3, "rewards": [1, 0.5]}`, 2)
	f.Fuzz(func(t *testing.T, line string, want int) {
		if want < 0 || want > 1000 {
			return
		}
		got, err := parseReply(line, want)
		if err == nil && len(got) != want {
			t.Fatalf("%q: %d rewards for %d", line, len(got), want)
		}
	})
}

package tokenids

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		B, T int
		want string
	}{
		{[]int32{0, 4, 1, 2}, 2, 2, ""},
		{[]int32{0, 4, 1}, 2, 2, "ids has 3 tokens, want B*T = 2*2 = 4"},
		{[]int32{0, 4, 5, 2}, 2, 2, "ids[2] (batch row 1, position 0) is token id 5, outside the vocabulary [0, 5)"},
		{[]int32{-1}, 1, 1, "ids[0] (batch row 0, position 0) is token id -1"},
	} {
		err := Check("ids", c.ids, c.B, c.T, 5)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.ids, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.ids, err, c.want)
		}
	}
}

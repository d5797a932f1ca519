package jsondiff

import "testing"

func TestFirstNamesTheFirstDifferingPath(t *testing.T) {
	type inner struct {
		Rank  int     `json:"r"`
		Alpha float64 `json:"alpha"`
	}
	type outer struct {
		Steps int    `json:"steps"`
		Name  string `json:"name"`
		LoRA  *inner `json:"lora,omitempty"`
	}
	saved := outer{Steps: 10, Name: "a", LoRA: &inner{Rank: 4, Alpha: 8}}
	for _, c := range []struct {
		name string
		cur  outer
		skip map[string]bool
		want string
	}{
		{"equal through different pointers", outer{Steps: 10, Name: "a", LoRA: &inner{Rank: 4, Alpha: 8}}, nil, ""},
		{"nested field", outer{Steps: 10, Name: "a", LoRA: &inner{Rank: 8, Alpha: 8}}, nil, `cfg field lora.r is 4 in the checkpoint but 8 here`},
		{"sorted order", outer{Steps: 11, Name: "b", LoRA: &inner{Rank: 4, Alpha: 8}}, nil, `cfg field name is "a" in the checkpoint but "b" here`},
		{"skipped path", outer{Steps: 11, Name: "a", LoRA: &inner{Rank: 4, Alpha: 8}}, map[string]bool{"steps": true}, ""},
		{"absent", outer{Steps: 10, Name: "a"}, nil, `cfg field lora.alpha is 8 in the checkpoint but absent here`},
	} {
		if got := First("cfg", saved, c.cur, c.skip); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

package tasks

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl"
)

func mustAddition(t *testing.T, cfg AdditionConfig) *Addition {
	t.Helper()
	a, err := NewAddition(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdditionFormatAndReward(t *testing.T) {
	a := mustAddition(t, DefaultAdditionConfig())
	p := a.Format(12, 345)
	if p.Text != "1 2 + 3 4 5 =" || p.Answer != " 3 5 7" || p.Meta["answer"] != " 3 5 7" || p.Meta["task"] != "addition" {
		t.Fatalf("prompt %+v", p)
	}
	if ex := p.Example(); ex.Prompt+ex.Completion != "1 2 + 3 4 5 = 3 5 7" {
		t.Errorf("SFT example %+v", ex)
	}
	plain := mustAddition(t, AdditionConfig{MinDigits: 1, MaxDigits: 3, HeldOutFraction: 0.1})
	if q := plain.Format(12, 345); q.Text != "12+345=" || q.Answer != "357" {
		t.Errorf("unspaced prompt %+v", q)
	}
	rev := mustAddition(t, AdditionConfig{MinDigits: 1, MaxDigits: 3, Spaced: true, ReversedAnswer: true, PartialCredit: true})
	q := rev.Format(12, 345)
	if q.Answer != " 7 5 3" {
		t.Errorf("reversed answer %q", q.Answer)
	}
	// Reversed answers align from the first (units) digit: " 7 5" has two right digits.
	if s, err := rev.Reward().Score(q.Text, " 7 5"+rl.EOSText, q.Meta); err != nil || math.Abs(s-(0.1+0.4*2/3)) > 1e-15 {
		t.Errorf("reversed partial credit %v %v", s, err)
	}
	strict := AdditionReward{Spaced: true}
	partial := AdditionReward{Spaced: true, PartialCredit: true}
	cases := []struct {
		completion     string
		strict, credit float64
	}{
		{" 3 5 7" + rl.EOSText, 1, 1},
		{" 3 5 7", 0, 0.5},                        // right digits, no EOS
		{" 3 5 8" + rl.EOSText, 0, 0.1 + 0.4*2/3}, // units digit wrong
		{" 4 5 7" + rl.EOSText, 0, 0.1 + 0.4*2/3},
		{" 5 7" + rl.EOSText, 0, 0.1 + 0.4*2/3}, // a digit short, aligned from the units
		{"357" + rl.EOSText, 0, 0},              // wrong format
		{" 3 5 7 " + rl.EOSText, 0, 0},          // trailing space
		{" 3 5 7" + rl.EOSText + " 1", 0, 0},    // text after EOS
		{"", 0, 0},
	}
	for _, c := range cases {
		if s, err := strict.Score(p.Text, c.completion, p.Meta); err != nil || s != c.strict {
			t.Errorf("strict %q: %v %v, want %v", c.completion, s, err, c.strict)
		}
		if s, err := partial.Score(p.Text, c.completion, p.Meta); err != nil || math.Abs(s-c.credit) > 1e-15 {
			t.Errorf("partial %q: %v %v, want %v", c.completion, s, err, c.credit)
		}
	}
	if _, err := strict.Score("", "", rl.Meta{}); err == nil || !strings.Contains(err.Error(), "answer") {
		t.Errorf("missing answer: err %v", err)
	}
	// Every sampled problem is scored 1 on its own answer.
	g, _ := NewGenerator(a, Train, 1)
	for i := 0; i < 200; i++ {
		p, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := a.Reward().Score(p.Text, p.Answer+rl.EOSText, p.Meta); s != 1 {
			t.Fatalf("%q: own answer scored %v", p.Text, s)
		}
	}
}

func TestAdditionSplitsAreDisjoint(t *testing.T) {
	a := mustAddition(t, AdditionConfig{MinDigits: 1, MaxDigits: 2, Spaced: true, HeldOutFraction: 0.2})
	test, train := map[string]bool{}, map[string]bool{}
	r := rng.New(5)
	for i := 0; i < 3000; i++ {
		p, err := a.Sample(r, Test)
		if err != nil {
			t.Fatal(err)
		}
		test[p.Text] = true
		q, err := a.Sample(r, Train)
		if err != nil {
			t.Fatal(err)
		}
		train[q.Text] = true
	}
	for k := range test {
		if train[k] {
			t.Fatalf("problem %q in both splits", k)
		}
	}
	// Over all 100*100 problems the held-out share is close to 20%.
	n := 0
	for x := uint64(0); x < 100; x++ {
		for y := uint64(0); y < 100; y++ {
			if inTest(x*1_000_000_007^y, 0.2) {
				n++
			}
		}
	}
	if f := float64(n) / 1e4; math.Abs(f-0.2) > 0.02 {
		t.Errorf("held-out fraction %v, want about 0.2", f)
	}
	// Operand digit counts stay within bounds.
	for k := range train {
		for _, tok := range strings.Split(strings.TrimSuffix(k, " ="), " + ") {
			if d := len(strings.ReplaceAll(tok, " ", "")); d < 1 || d > 2 {
				t.Fatalf("operand %q in %q", tok, k)
			}
		}
	}
}

func TestCopyTask(t *testing.T) {
	cfg := DefaultCopyConfig()
	cfg.Reverse, cfg.PartialCredit = true, true
	c, err := NewCopy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Format("abc")
	if p.Text != "reverse: a b c =" || p.Answer != " c b a ." || p.Task != "reverse" {
		t.Fatalf("prompt %+v", p)
	}
	want := []Piece{{" c", false}, {" b", false}, {" a", false}, {" .", true}}
	if !reflect.DeepEqual(p.Format, want) {
		t.Errorf("format %+v", p.Format)
	}
	r := c.Reward()
	for comp, s := range map[string]float64{
		" c b a ." + rl.EOSText: 1,
		" c b a .":              0.5,
		" c x a ." + rl.EOSText: 0.1 + 0.4*2/3,
		" c b a" + rl.EOSText:   0, // end marker missing: malformed
		" a b c ." + rl.EOSText: 0.1 + 0.4/3,
	} {
		got, err := r.Score(p.Text, comp, p.Meta)
		if err != nil || math.Abs(got-s) > 1e-15 {
			t.Errorf("%q: %v %v, want %v", comp, got, err, s)
		}
	}
}

func TestSourcesAreDeterministic(t *testing.T) {
	a := mustAddition(t, DefaultAdditionConfig())
	draw := func(seed uint64) []string {
		g, _ := NewGenerator(a, Train, seed)
		ps, err := Batch(g, 20)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Text
		}
		return out
	}
	if !reflect.DeepEqual(draw(7), draw(7)) {
		t.Error("same seed, different prompts")
	}
	if reflect.DeepEqual(draw(7), draw(8)) {
		t.Error("different seeds, same prompts")
	}
}

func TestListOrderAndShuffle(t *testing.T) {
	ps := make([]Prompt, 10)
	for i := range ps {
		ps[i] = Prompt{Text: string(rune('a' + i))}
	}
	l, _ := NewList(ps, false, 1)
	got, _ := Batch(l, 25)
	for i, p := range got {
		if p.Text != ps[i%10].Text {
			t.Fatalf("ordered list: draw %d is %q", i, p.Text)
		}
	}
	if l.Epoch() != 2 {
		t.Errorf("epoch %d after 25 draws of 10, want 2", l.Epoch())
	}
	s1, _ := NewList(ps, true, 3)
	s2, _ := NewList(ps, true, 3)
	a, _ := Batch(s1, 20)
	b, _ := Batch(s2, 20)
	if !reflect.DeepEqual(a, b) {
		t.Error("shuffled lists with one seed differ")
	}
	for e := 0; e < 2; e++ {
		seen := map[string]bool{}
		for _, p := range a[e*10 : e*10+10] {
			seen[p.Text] = true
		}
		if len(seen) != 10 {
			t.Errorf("epoch %d is not a permutation", e)
		}
	}
	if reflect.DeepEqual(a[:10], got[:10]) || reflect.DeepEqual(a[:10], a[10:]) {
		t.Error("shuffle did not reorder, or repeated the same permutation")
	}
	if _, err := NewList(nil, false, 0); err == nil {
		t.Error("empty list accepted")
	}
}

func TestMixerRatios(t *testing.T) {
	a := mustAddition(t, DefaultAdditionConfig())
	c, _ := NewCopy(DefaultCopyConfig())
	ga, _ := NewGenerator(a, Train, 1)
	gc, _ := NewGenerator(c, Train, 2)
	m, err := NewMixer([]Source{ga, gc}, []float64{0.8, 0.2}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < 20; w++ {
		ps, _ := Batch(m, 5)
		n := 0
		for _, p := range ps {
			if p.Task == "addition" {
				n++
			}
		}
		if n != 4 {
			t.Fatalf("window %d holds %d addition prompts of 5, want 4", w, n)
		}
	}
	ms, _ := NewMixer([]Source{ga, gc}, []float64{4, 1}, true, 9)
	Batch(ms, 2000)
	if f := float64(ms.Counts()[0]) / 2000; math.Abs(f-0.8) > 0.04 {
		t.Errorf("shuffled mixer drew %v addition, want about 0.8", f)
	}
	// The mixture is scored by one reward that routes by task.
	tr, err := NewTaskReward(a, c)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := Batch(m, 10)
	for _, p := range ps {
		if s, err := tr.Score(p.Text, p.Answer+rl.EOSText, p.Meta); err != nil || s != 1 {
			t.Errorf("%s %q: %v %v", p.Task, p.Text, s, err)
		}
	}
	if _, err := tr.Score("", "", rl.Meta{"task": "chess", "answer": ""}); err == nil || !strings.Contains(err.Error(), "chess") {
		t.Errorf("unknown task: err %v", err)
	}
	for _, bad := range [][]float64{{1}, {1, 0}, {1, math.NaN()}} {
		if _, err := NewMixer([]Source{ga, gc}, bad, false, 0); err == nil {
			t.Errorf("weights %v accepted", bad)
		}
	}
}

func TestMaterialize(t *testing.T) {
	a := mustAddition(t, AdditionConfig{MinDigits: 1, MaxDigits: 1, Spaced: true, HeldOutFraction: 0.3})
	ps, err := Materialize(a, Test, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Text] {
			t.Fatalf("duplicate %q", p.Text)
		}
		seen[p.Text] = true
	}
	// Only 100 one-digit problems exist; asking for more than the split holds fails.
	if _, err := Materialize(a, Test, 90, 1); err == nil || !strings.Contains(err.Error(), "distinct") {
		t.Errorf("err %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  AdditionConfig
		want string
	}{
		{AdditionConfig{MinDigits: 0, MaxDigits: 2}, "min_digits"},
		{AdditionConfig{MinDigits: 3, MaxDigits: 2}, "max_digits"},
		{AdditionConfig{MinDigits: 1, MaxDigits: 10}, "max_digits"},
		{AdditionConfig{MinDigits: 1, MaxDigits: 2, HeldOutFraction: 1}, "held_out_fraction"},
	} {
		if _, err := NewAddition(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
	for _, c := range []struct {
		edit func(*CopyConfig)
		want string
	}{
		{func(c *CopyConfig) { c.MinLen = 0 }, "min_len"},
		{func(c *CopyConfig) { c.MaxLen = 1 }, "max_len"},
		{func(c *CopyConfig) { c.Alphabet = "aA" }, "alphabet"},
		{func(c *CopyConfig) { c.Alphabet = "aba" }, "alphabet"},
		{func(c *CopyConfig) { c.EndMarker = "  " }, "end_marker"},
		{func(c *CopyConfig) { c.HeldOutFraction = -0.1 }, "held_out_fraction"},
	} {
		cfg := DefaultCopyConfig()
		c.edit(&cfg)
		if _, err := NewCopy(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
	if _, err := NewGenerator(mustAddition(t, DefaultAdditionConfig()), "dev", 0); err == nil || !strings.Contains(err.Error(), "split") {
		t.Errorf("bad split: err %v", err)
	}
}

func TestLoadJSONL(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.jsonl")
	os.WriteFile(good, []byte(`{"prompt": "2 + 3 =", "answer": " 5", "task": "addition"}

{"prompt": "hi", "meta": {"k": "v"}}
`), 0o644)
	ps, err := LoadJSONL(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Meta["answer"] != " 5" || ps[0].Task != "addition" || ps[1].Meta["k"] != "v" || ps[1].Meta["task"] != "jsonl" {
		t.Errorf("prompts %+v", ps)
	}
	for body, want := range map[string]string{
		`{"prompt": "a"}` + "\n" + `{"answer": "x"}`: "p.jsonl:2",
		`{"prompt": "a", "extra": 1}`:                "unknown field",
		`{"prompt": `:                                "p.jsonl:1",
		"\n\n":                                       "no prompts",
	} {
		os.WriteFile(good, []byte(body), 0o644)
		if _, err := LoadJSONL(good); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
	if _, err := LoadJSONL(filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: err %v", err)
	}
}

func TestGroup(t *testing.T) {
	ps := []Prompt{{Text: "a"}, {Text: "b"}}
	g, err := Group(ps, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range g {
		got = append(got, p.Text)
	}
	if strings.Join(got, "") != "aaabbb" {
		t.Errorf("grouped %v", got)
	}
	if _, err := Group(ps, 0); err == nil || !strings.Contains(err.Error(), "group_size") {
		t.Errorf("err %v", err)
	}
}

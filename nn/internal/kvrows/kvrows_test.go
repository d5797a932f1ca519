package kvrows

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// A step groups consecutive rows at one position feeding as many tokens into one run, so that
// all rows together (Step) or a forked group cost one attention call.
func TestPlanRuns(t *testing.T) {
	r := New(5, 10)
	r.pos = []int{2, 2, 2, 4, 2}
	for _, c := range []struct {
		rows, lens []int
		want       []Run
	}{
		{[]int{0, 1, 2}, []int{1, 1, 1}, []Run{{First: 0, Count: 3, Row: 0, Pos: 2, N: 1, Off: 0}}},
		{[]int{1, 2, 3, 4}, []int{2, 2, 2, 2}, []Run{{0, 2, 1, 2, 2, 0}, {2, 1, 3, 4, 2, 4}, {3, 1, 4, 2, 2, 6}}},
		{[]int{2, 1, 0}, []int{1, 1, 1}, []Run{{0, 1, 2, 2, 1, 0}, {1, 1, 1, 2, 1, 1}, {2, 1, 0, 2, 1, 2}}},
		{[]int{0, 1, 2}, []int{1, 3, 3}, []Run{{0, 1, 0, 2, 1, 0}, {1, 2, 1, 2, 3, 1}}},
	} {
		n := 0
		for _, l := range c.lens {
			n += l
		}
		p, err := r.Plan(c.rows, c.lens, make([]int32, n), 7)
		if err != nil {
			t.Fatalf("rows %v: %v", c.rows, err)
		}
		if !reflect.DeepEqual(p.Runs, c.want) {
			t.Errorf("rows %v lens %v: runs %+v, want %+v", c.rows, c.lens, p.Runs, c.want)
		}
		if p.Tokens != n {
			t.Errorf("rows %v: %d tokens, want %d", c.rows, p.Tokens, n)
		}
	}
	p, _ := r.Plan([]int{3, 0}, []int{2, 1}, []int32{1, 2, 3}, 7)
	r.Advance(p)
	if want := []int{3, 2, 2, 6, 2}; !reflect.DeepEqual(r.pos, want) {
		t.Errorf("after Advance positions %v, want %v", r.pos, want)
	}
}

// Fork copies exactly the source's filled positions of every cache and nothing else.
func TestFork(t *testing.T) {
	be := cpu.New()
	const B, limit, W = 3, 4, 2
	var caches []*tensor.Tensor
	for range 2 {
		c, err := tensor.New(be, tensor.Float32, B, limit, W)
		if err != nil {
			t.Fatal(err)
		}
		v := cpu.Float32s(c)
		for i := range v {
			v[i] = float32(i)
		}
		caches = append(caches, c)
	}
	r := New(B, limit)
	r.pos[1] = 3
	if err := r.Fork(be, caches, W, 1, []int{2, 0}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.pos, []int{3, 3, 3}) {
		t.Errorf("positions %v after the fork, want [3 3 3]", r.pos)
	}
	want := []float32{8, 9, 10, 11, 12, 13, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 22, 23}
	for i, c := range caches {
		if got := cpu.Float32s(c); !reflect.DeepEqual(got, want) {
			t.Errorf("cache %d after the fork: %v, want %v", i, got, want)
		}
	}
	// A prefix fork copies just its first positions: row 1's first two into row 0.
	for _, c := range caches {
		v := cpu.Float32s(c)
		for i := range v {
			v[i] = float32(i)
		}
	}
	if err := r.ForkPrefix(be, caches, W, 1, 2, []int{0}); err != nil {
		t.Fatal(err)
	}
	want = []float32{8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
	if got := cpu.Float32s(caches[1]); r.pos[0] != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("after a prefix fork of 2 positions: row 0 at %d, cache %v; want 2, %v", r.pos[0], got, want)
	}
	if err := r.ForkPrefix(be, caches, W, 0, 3, []int{2}); err == nil || !strings.Contains(err.Error(), "3 positions from row 0, which holds 2") {
		t.Errorf("prefix fork past the source's position: got %v", err)
	}
	err := r.Fork(be, caches, W, 0, []int{0})
	if err == nil || !strings.Contains(err.Error(), "source row 0") {
		t.Errorf("fork onto the source: got %v", err)
	}
}

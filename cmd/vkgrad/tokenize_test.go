package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTokenizeAndDecode(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"tokenize", "Hello world"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	// GPT-2's ids for "Hello" and " world".
	if got := strings.TrimSpace(out.String()); got != "15496 995" {
		t.Fatalf("tokenize = %q, want 15496 995", got)
	}
	out.Reset()
	if err := run([]string{"tokenize", "--decode", "15496, 995"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "Hello world" {
		t.Fatalf("decode = %q", got)
	}
	out.Reset()
	if err := run([]string{"tokenize", "--special", "a<|endoftext|>"}, &out, &errOut); err != nil || !strings.HasSuffix(strings.TrimSpace(out.String()), " 50256") {
		t.Fatalf("special tokens: %q, %v", out.String(), err)
	}
	if err := run([]string{"tokenize", "--decode", "99999999"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "99999999") {
		t.Fatalf("an id outside the vocabulary: %v", err)
	}
}

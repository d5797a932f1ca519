package tokenizer

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func mustGPT2(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := GPT2()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGPT2Cached(t *testing.T) {
	a, b := mustGPT2(t), mustGPT2(t)
	if a != b {
		t.Fatal("GPT2() built a second instance")
	}
	if a.VocabSize() != 50257 || a.EOT() != 50256 {
		t.Fatalf("vocab %d eot %d, want 50257 50256", a.VocabSize(), a.EOT())
	}
}

// Ids from GPT-2's published encoder.json.
func TestKnownEncodings(t *testing.T) {
	tok := mustGPT2(t)
	cases := []struct {
		text string
		ids  []int32
	}{
		{"Hello world", []int32{15496, 995}},
		{" the", []int32{262}},
		{"The quick brown fox jumps over the lazy dog.", []int32{464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13}},
		{"\n\n", []int32{628}},
		{"", nil},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
	}
	for id, want := range map[int32]string{15496: "Hello", 995: " world", 262: " the", 0: "!", 198: "\n"} {
		p, err := tok.Piece(id)
		if err != nil {
			t.Fatal(err)
		}
		if string(p) != want {
			t.Errorf("Piece(%d) = %q, want %q", id, p, want)
		}
	}
}

func TestEndOfText(t *testing.T) {
	tok := mustGPT2(t)
	// As ordinary text the marker is seven tokens: "<" "|" "end" "of" "text" "|" ">".
	plain := tok.Encode(EOTText)
	if slices.Contains(plain, EOT) {
		t.Fatalf("Encode turned the marker into EOT: %v", plain)
	}
	var pieces []string
	for _, id := range plain {
		p, _ := tok.Piece(id)
		pieces = append(pieces, string(p))
	}
	if want := []string{"<", "|", "end", "of", "text", "|", ">"}; !slices.Equal(pieces, want) {
		t.Fatalf("marker as text: pieces %q, want %q", pieces, want)
	}
	special := tok.EncodeSpecial("Hello world" + EOTText + " the" + EOTText)
	if want := []int32{15496, 995, EOT, 262, EOT}; !slices.Equal(special, want) {
		t.Fatalf("EncodeSpecial = %v, want %v", special, want)
	}
	s, err := tok.Decode(special)
	if err != nil {
		t.Fatal(err)
	}
	if s != "Hello world<|endoftext|> the<|endoftext|>" {
		t.Fatalf("Decode = %q", s)
	}
}

func TestLongSentencePieces(t *testing.T) {
	tok := mustGPT2(t)
	text := "In 1879, Albert Einstein was born in Ulm; he didn't like rote learning, and later said: \"Imagination is more important than knowledge.\""
	ids := tok.Encode(text)
	if len(ids) < 20 || len(ids) > len(text)/2 {
		t.Fatalf("%d tokens for %d bytes: BPE merged too little or too much", len(ids), len(text))
	}
	// Decoding token by token must rebuild the text, and every piece must be one token of the
	// vocabulary (encoding the piece alone yields exactly that id).
	var sb strings.Builder
	for _, id := range ids {
		p, err := tok.Piece(id)
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(p)
		if again := tok.Encode(string(p)); len(again) != 1 || again[0] != id {
			t.Errorf("piece %q of id %d encodes to %v", p, id, again)
		}
	}
	if sb.String() != text {
		t.Fatalf("pieces join to %q", sb.String())
	}
	// The splitting rules: contractions and leading spaces stay with their word.
	for _, want := range []string{" Einstein", "'t", " learning", " knowledge"} {
		found := false
		for _, id := range ids {
			if p, _ := tok.Piece(id); string(p) == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no token %q in %v", want, ids)
		}
	}
}

func TestRoundTripNonASCII(t *testing.T) {
	tok := mustGPT2(t)
	for _, s := range []string{
		"héllo wörld", "日本語のテキスト", "emoji 🤖🎉 and ZWJ 👩‍💻", "Ελληνικά, русский, עברית, العربية",
		"tabs\tand\r\nCRLF  \n\n\n   trailing   ", "<|endoftext|>inside<|endoftext|>",
	} {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		if got != s {
			t.Errorf("round trip of %q gave %q (ids %v)", s, got, ids)
		}
	}
}

// Text is split as Unicode, so each invalid byte is read as U+FFFD.
func TestEncodeInvalidUTF8(t *testing.T) {
	tok := mustGPT2(t)
	got := tok.Encode("\xff\xfea\xc3")
	if want := tok.Encode("\ufffd\ufffda\ufffd"); !slices.Equal(got, want) {
		t.Fatalf("Encode of invalid bytes = %v, want %v", got, want)
	}
}

func TestDecodeBadID(t *testing.T) {
	tok := mustGPT2(t)
	for _, bad := range []int32{50257, 60000, -1} {
		_, err := tok.Decode([]int32{15496, 995, bad, 70000})
		if err == nil {
			t.Fatalf("Decode accepted id %d", bad)
		}
		if msg := err.Error(); !strings.Contains(msg, "position 2") || !strings.Contains(msg, itoa(bad)) {
			t.Errorf("error %q does not name id %d at position 2", msg, bad)
		}
	}
	if _, err := tok.Piece(50257); err == nil {
		t.Fatal("Piece accepted 50257")
	}
}

func itoa(i int32) string {
	var b []byte
	neg := i < 0
	if neg {
		i = -i
	}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			break
		}
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func TestStreamingDecoder(t *testing.T) {
	tok := mustGPT2(t)
	text := "日本語 🤖 ok é"
	ids := tok.Encode(text)
	d := tok.NewDecoder()
	var out strings.Builder
	held := false
	for _, id := range ids {
		s, err := d.Add(id)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(s) {
			t.Fatalf("Add returned broken text %q", s)
		}
		p, _ := tok.Piece(id)
		if !utf8.Valid(p) {
			held = true
		}
		out.WriteString(s)
	}
	out.WriteString(d.Flush())
	if out.String() != text {
		t.Fatalf("streamed %q, want %q", out.String(), text)
	}
	if !held {
		t.Fatal("test text has no token splitting a character; it tests nothing")
	}
	// An unfinished character is held back by Add and returned by Flush, not lost.
	d = tok.NewDecoder()
	partial := tok.Encode(" 日")[:1] // " \xe6": a space and the first byte of 日
	if p, _ := tok.Piece(partial[0]); string(p) != " \xe6" {
		t.Fatalf("piece %q, want \" \\xe6\"", p)
	}
	if s, _ := d.Add(partial[0]); s != " " {
		t.Fatalf("Add returned %q, want only the space", s)
	}
	if rest := d.Flush(); rest != "\xe6" {
		t.Fatalf("Flush returned %q, want the held byte", rest)
	}
	if _, err := d.Add(50257); err == nil {
		t.Fatal("Decoder accepted id 50257")
	}
}

func TestCompletePrefix(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 3},
		{[]byte("a\xe6"), 1},
		{[]byte("a\xe6\x97"), 1},
		{[]byte("a\xe6\x97\xa5"), 4},
		{[]byte("\xf0\x9f\xa4"), 0},
		{[]byte("\xf0\x9f\xa4\x96"), 4},
		{[]byte("a\xe6A"), 3}, // invalid: never completed, so not held
		{[]byte("\x97\xa5"), 2},
	} {
		if got := completePrefix(c.in); got != c.want {
			t.Errorf("completePrefix(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := mustGPT2(t)
	text := strings.Repeat("func main() { fmt.Println(\"héllo\") }\n", 50)
	want := tok.Encode(text)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			if got := tok.Encode(text); !slices.Equal(got, want) {
				errs <- "concurrent Encode differs"
			}
			if b, _ := tok.DecodeBytes(want); !bytes.Equal(b, []byte(text)) {
				errs <- "concurrent Decode differs"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func ExampleTokenizer_Encode() {
	tok, err := GPT2()
	if err != nil {
		panic(err)
	}
	ids := tok.EncodeSpecial("Hello world<|endoftext|>")
	text, _ := tok.Decode(ids)
	fmt.Println(ids, text)
	// Output: [15496 995 50256] Hello world<|endoftext|>
}

// TestRoundTripEveryASCIIByteAndRandomText: every ASCII character (DEL included, which the
// BPE library drops) and random valid UTF-8 text decode back to themselves.
func TestRoundTripEveryASCIIByteAndRandomText(t *testing.T) {
	tk, err := GPT2()
	if err != nil {
		t.Fatal(err)
	}
	check := func(s string) {
		t.Helper()
		got, err := tk.Decode(tk.Encode(s))
		if err != nil || got != s {
			t.Fatalf("%q decodes back to %q (%v)", s, got, err)
		}
	}
	for b := range 128 {
		check(string(rune(b)))
		check("a" + string(rune(b)) + "b")
	}
	if p, _ := tk.Piece(221); string(p) != "\x7f" {
		t.Errorf("token 221 is %q, want DEL", p)
	}
	r := uint64(1)
	for range 300 {
		var sb strings.Builder
		for range 12 {
			r = r*6364136223846793005 + 1442695040888963407
			switch r >> 62 {
			case 0:
				sb.WriteByte(byte(r>>40) & 0x7f)
			case 1:
				sb.WriteRune(rune(0x80 + (r>>32)%0x700))
			case 2:
				sb.WriteRune(rune(0x4e00 + (r>>32)%0x500))
			default:
				sb.WriteString(" \x7f")
			}
		}
		check(sb.String())
	}
}

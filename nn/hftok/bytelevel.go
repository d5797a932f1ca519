package hftok

// GPT-2's byte-level alphabet: every byte is a printable character, the printable ASCII and
// Latin-1 ones as themselves and the rest shifted past U+0100, so BPE works on text.
var byteToRune, runeToByte = byteAlphabet()

func byteAlphabet() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := map[rune]byte{}
	n := 0
	for b := range 256 {
		printable := b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}

package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/tokenizer"
)

func init() {
	register("tokenize", "print the token ids of a text (or, with --decode, the text of ids)", func(fs *pflag.FlagSet) func([]string) error {
		decode := fs.Bool("decode", false, "read token ids (separated by spaces or commas) and print their text")
		pieces := fs.Bool("pieces", false, "also print each token's text, one token per line")
		special := fs.Bool("special", false, "match special tokens such as <|endoftext|> written in the text")
		return func(args []string) error {
			tok, err := tokenizer.GPT2()
			if err != nil {
				return err
			}
			text := strings.Join(args, " ")
			if len(args) == 0 {
				b, err := io.ReadAll(os.Stdin)
				if err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
				text = string(b)
			}
			if *decode {
				return printDecoded(tok, text)
			}
			ids := tok.Encode(text)
			if *special {
				ids = tok.EncodeSpecial(text)
			}
			return printIDs(tok, ids, *pieces)
		}
	})
}

func printIDs(tok *tokenizer.Tokenizer, ids []int32, pieces bool) error {
	if !pieces {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.Itoa(int(id))
		}
		fmt.Fprintln(stdout, strings.Join(parts, " "))
		return nil
	}
	for _, id := range ids {
		p, err := tok.Piece(id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d\t%q\n", id, p)
	}
	return nil
}

func printDecoded(tok *tokenizer.Tokenizer, text string) error {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '[' || r == ']' })
	ids := make([]int32, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= tok.VocabSize() {
			return fmt.Errorf("--decode: %q is not a token id in [0, %d)", f, tok.VocabSize())
		}
		ids[i] = int32(n)
	}
	s, err := tok.Decode(ids)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, s)
	return nil
}

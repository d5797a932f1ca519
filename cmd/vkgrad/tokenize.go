package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
)

// tokenizeCommand is `vkgrad tokenize`.
func tokenizeCommand() command {
	return command{name: "tokenize", summary: "print the token ids of a text (or, with --decode, the text of ids)", setup: func(fs *pflag.FlagSet) func([]string) error {
		decode := fs.Bool("decode", false, "read token ids (separated by spaces or commas) and print their text")
		pieces := fs.Bool("pieces", false, "also print each token's text, one token per line")
		special := fs.Bool("special", false, "match special tokens such as <|endoftext|> written in the text")
		model := fs.String("model", "", "a Hugging Face model directory whose tokenizer.json to use (default: GPT-2's tokenizer)")
		return func(args []string) error {
			text := strings.Join(args, " ")
			if len(args) == 0 {
				b, err := io.ReadAll(os.Stdin)
				if err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
				text = string(b)
			}
			if *model != "" {
				return tokenizeHF(*model, text, *decode, *pieces)
			}
			tok, err := tokenizer.GPT2()
			if err != nil {
				return err
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
	}}
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

// tokenizeHF is tokenize with a Hugging Face tokenizer.json (special tokens always match).
func tokenizeHF(dir, text string, decode, pieces bool) error {
	tok, err := hftok.Load(dir)
	if err != nil {
		return err
	}
	if decode {
		var ids []int
		for _, f := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(", \n\t[]", r) }) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("--decode: %q is not a token id", f)
			}
			ids = append(ids, n)
		}
		s, err := tok.Decode(ids)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, s)
		return nil
	}
	ids := tok.Encode(text)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
		if pieces {
			b, _ := tok.DecodeBytes([]int{id})
			parts[i] = fmt.Sprintf("%d\t%q", id, b)
		}
	}
	sep := " "
	if pieces {
		sep = "\n"
	}
	fmt.Fprintln(stdout, strings.Join(parts, sep))
	return nil
}

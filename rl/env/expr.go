package env

import (
	"fmt"
	"math/big"
)

// Limits on an expression, so a hostile one costs little.
const (
	maxExprLen   = 1024
	maxExprDepth = 64
)

// evaluate computes an arithmetic expression exactly: integers of any size, + - * /,
// unary signs and parentheses, with the usual precedence. Division is exact, so 7/2 is 7/2,
// not 3. It parses the text itself; nothing is executed.
func evaluate(expr string) (*big.Rat, error) {
	if len(expr) > maxExprLen {
		return nil, fmt.Errorf("expression longer than %d bytes", maxExprLen)
	}
	p := &exprParser{s: expr}
	v, err := p.sum(0)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.i < len(p.s) {
		return nil, p.errorf("unexpected %q", p.s[p.i])
	}
	return v, nil
}

// formatRat writes an integer as its digits and any other value as a reduced fraction.
func formatRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.String()
}

// exprParser is a recursive-descent parser that evaluates as it goes.
type exprParser struct {
	s string
	i int
}

func (p *exprParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *exprParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

// next returns the next byte after white space, 0 at the end.
func (p *exprParser) next() byte {
	if p.skipSpace(); p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// sum is term (("+" | "-") term)*.
func (p *exprParser) sum(depth int) (*big.Rat, error) {
	v, err := p.product(depth)
	for err == nil {
		op := p.next()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.i++
		var w *big.Rat
		if w, err = p.product(depth); err == nil {
			if op == '+' {
				v.Add(v, w)
			} else {
				v.Sub(v, w)
			}
		}
	}
	return nil, err
}

// product is unary (("*" | "/") unary)*.
func (p *exprParser) product(depth int) (*big.Rat, error) {
	v, err := p.unary(depth)
	for err == nil {
		op := p.next()
		if op != '*' && op != '/' {
			return v, nil
		}
		at := p.i
		p.i++
		var w *big.Rat
		if w, err = p.unary(depth); err == nil {
			if op == '*' {
				v.Mul(v, w)
			} else if w.Sign() == 0 {
				p.i = at
				err = p.errorf("division by zero")
			} else {
				v.Quo(v, w)
			}
		}
	}
	return nil, err
}

// unary is ("+" | "-") unary, or a number, or "(" sum ")".
func (p *exprParser) unary(depth int) (*big.Rat, error) {
	if depth > maxExprDepth {
		return nil, p.errorf("nested deeper than %d", maxExprDepth)
	}
	switch c := p.next(); {
	case c == '+' || c == '-':
		p.i++
		v, err := p.unary(depth + 1)
		if err == nil && c == '-' {
			v.Neg(v)
		}
		return v, err
	case c == '(':
		p.i++
		v, err := p.sum(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.next() != ')' {
			return nil, p.errorf("want )")
		}
		p.i++
		return v, nil
	case c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		v, _ := new(big.Int).SetString(p.s[start:p.i], 10)
		return new(big.Rat).SetInt(v), nil
	case c == 0:
		return nil, p.errorf("the expression ends where a number is wanted")
	default:
		return nil, p.errorf("unexpected %q where a number is wanted", c)
	}
}

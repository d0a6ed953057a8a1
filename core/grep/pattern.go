package grep

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"sandfs/core/pathmatch"
)

// Regular expressions from clients. One a client sends is compiled here
// and nowhere else, so one set of bounds holds for grep and the one-file
// search; a glob is checked by pathmatch.CheckGlob, for every route that takes
// one.
//
// Go's regexp runs in time linear in its input, but the factor is the size
// of the compiled program: a search keeps up to one thread per instruction
// alive per input byte. The parser caps a counted repetition at 1000, yet
// "(.*){1,1000}" still compiles to 5,001 instructions. So a pattern is
// refused when its program has more than MaxPatternInsts instructions,
// and the bytes one search may scan are capped at PatternWork/instructions
// (see MaxInputFor): the work of a search is bounded by PatternWork
// NFA steps whatever the pattern, a few seconds a file at most
// (RELIABILITY.md, "costly patterns", has the figures). Every search also
// stops when its context ends (see Run).

// MaxPatternInsts is the largest compiled program a client's regular
// expression may have. Ordinary patterns are far below it ("\w+\s*=\s*\d+"
// is 11 instructions, a 20-word alternation about 150, ".{1000}" 1,002).
const MaxPatternInsts = 2000

// PatternWork bounds instructions × bytes of one regular-expression search
// of one file.
const PatternWork = 1 << 30

// compileRegexp compiles a client's regular expression (Perl syntax, as
// regexp.Compile) and returns it with its program's size in instructions.
// A malformed pattern or one whose program is over MaxPatternInsts is a
// *pathmatch.PatternError whose message says why; the one shown is orig, the
// client's own text (expr may carry flags added by the caller).
//
// With lineMode, the pattern is rewritten so that no match contains a
// newline (as ripgrep does for a line search): "." and every class lose
// "\n" and a literal newline matches nothing. A line search asks whether a
// line matches, so its answers are the same, and a search then never
// crosses a line: one scan of the data finds every matching line, where a
// match crossing lines would otherwise be rescanned from the next line
// (quadratic).
func compileRegexp(orig, expr string, lineMode bool) (*regexp.Regexp, int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, 0, &pathmatch.PatternError{Pattern: orig, Err: asTyped(err, orig)}
	}
	if lineMode {
		withoutNewline(re)
		expr = re.String()
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, 0, &pathmatch.PatternError{Pattern: orig, Err: err}
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return nil, 0, &pathmatch.PatternError{Pattern: orig, Err: fmt.Errorf("%w: it compiles to %d instructions, more than the limit of %d "+
			"(counted repetitions of groups, such as (.*){1,1000}, multiply a pattern's size)", pathmatch.ErrPatternTooComplex, n, MaxPatternInsts)}
	}
	rx, err := regexp.Compile(expr)
	if err != nil {
		return nil, 0, &pathmatch.PatternError{Pattern: orig, Err: err}
	}
	return rx, len(prog.Inst), nil
}

// withoutNewline rewrites re in place so that nothing in it matches '\n'.
func withoutNewline(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			*re = syntax.Regexp{Op: syntax.OpNoMatch}
			return
		}
		re.Rune = out
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, '\n') {
			*re = syntax.Regexp{Op: syntax.OpNoMatch}
			return
		}
	}
	for _, sub := range re.Sub {
		withoutNewline(sub)
	}
}

// asTyped is a parse error that quotes the client's pattern, not the
// expression sandfs made of it (flags added, "(?m)(" for "("): the part
// that failed, if it is in orig, else orig whole.
func asTyped(err error, orig string) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return err
	}
	expr := se.Expr
	if !strings.Contains(orig, expr) {
		expr = orig
	}
	return &syntax.Error{Code: se.Code, Expr: expr}
}

// MaxInputFor is the most bytes a search with a program of insts
// instructions may scan in one file: PatternWork/insts.
func MaxInputFor(insts int) int64 {
	return PatternWork / int64(max(insts, 1))
}

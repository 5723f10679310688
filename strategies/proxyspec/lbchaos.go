package proxyspec

import (
	"errors"
	"fmt"
)

// builtin parses a built-in strategy spec into its canonical form; see
// RegisterBuiltin.
var builtin func(spec string) (string, error)

// RegisterBuiltin sets the parser of the strategy an lbchaos:STRATEGY spec
// names: parse returns the strategy's canonical form, or an error naming
// the strategy, wrapper or parameter at fault. Package strategies, which
// this package cannot import, registers its Parse when it is initialized,
// so every program that links it parses lbchaos specs; Parse rejects them
// in one that does not. It panics when called twice.
func RegisterBuiltin(parse func(spec string) (string, error)) {
	if builtin != nil {
		panic("proxyspec: RegisterBuiltin called twice")
	}
	builtin = parse
}

// parseLbchaos parses the strategy of an lbchaos spec.
func parseLbchaos(strategy string) (Spec, error) {
	if builtin == nil {
		return Spec{}, errors.New("lbchaos: no parser of built-in strategies (RegisterBuiltin)")
	}
	canonical, err := builtin(strategy)
	if err != nil {
		return Spec{}, fmt.Errorf("lbchaos: %w", err)
	}
	return Spec{Kind: Lbchaos, Algorithm: canonical}, nil
}

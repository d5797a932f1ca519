package env

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// builtins are the environments Lookup knows.
var builtins = map[string]Factory{
	"calculator": newCalculator,
	"guess":      newGuess,
}

// Names lists the built-in environments, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(builtins))
}

// Lookup returns the factory of the built-in environment called name.
func Lookup(name string) (Factory, error) {
	if f, ok := builtins[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("environment %q: the built-in environments are %s", name, strings.Join(Names(), ", "))
}

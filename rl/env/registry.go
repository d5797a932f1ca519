package env

import (
	"fmt"
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
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the factory of the built-in environment called name.
func Lookup(name string) (Factory, error) {
	if f, ok := builtins[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("environment %q: the built-in environments are %s", name, strings.Join(Names(), ", "))
}

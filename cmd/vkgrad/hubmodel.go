package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/hub"
)

// modelFlags are the flags that name a model; each also accepts a Hugging Face model name.
var modelFlags = []string{"model", "init"}

// addRevisionFlag registers --revision on a command that takes a model, and says in the model
// flag's help that a Hub name is accepted.
func addRevisionFlag(fs *pflag.FlagSet) {
	if fs.Lookup("revision") != nil {
		return
	}
	var named []string
	for _, name := range modelFlags {
		if f := fs.Lookup(name); f != nil {
			f.Usage += "; or a Hugging Face model name ORG/NAME (see --revision)"
			named = append(named, "--"+name)
		}
	}
	if len(named) > 0 {
		fs.String("revision", "main", "branch, tag or commit of a Hugging Face model ORG/NAME given to "+strings.Join(named, " or ")+
			": looked up in the Hugging Face cache ($HF_HUB_CACHE), else downloaded into it from the Hub ($HF_ENDPOINT, $HF_TOKEN; HF_HUB_OFFLINE=1: the cache only)")
	}
}

// resolveModelFlags replaces a model flag's Hugging Face name ORG/NAME by the model's directory
// in the Hugging Face cache, downloading it when the cache lacks it; a local path of that name
// is left as it is.
func resolveModelFlags(fs *pflag.FlagSet, stderr io.Writer) error {
	rev := fs.Lookup("revision")
	if rev == nil {
		return nil
	}
	resolved := false
	for _, name := range modelFlags {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		v := f.Value.String()
		if _, err := os.Stat(v); err == nil || !hub.IsRepoID(v) {
			continue
		}
		opts := hub.Options{Revision: rev.Value.String()}
		if q := fs.Lookup("quiet"); q == nil || q.Value.String() != "true" {
			opts.Progress = stderr
		}
		dir, err := hub.Resolve(context.Background(), v, opts)
		if err != nil {
			return fmt.Errorf("--%s %s: %w", name, v, err)
		}
		if err := f.Value.Set(dir); err != nil {
			return fmt.Errorf("--%s %s: %w", name, v, err)
		}
		resolved = true
	}
	if rev.Changed && !resolved {
		return fmt.Errorf("--revision %s: no model flag names a Hugging Face model ORG/NAME (a local path of that name wins)", rev.Value.String())
	}
	return nil
}

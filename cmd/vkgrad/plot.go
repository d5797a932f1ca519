package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/plot"
)

// plotCommand is `vkgrad plot`.
func plotCommand() command {
	return command{name: "plot", summary: "draw a run's curves (loss, reward, KL, ...) against the step; several runs overlaid", setup: func(fs *pflag.FlagSet) func([]string) error {
		out := fs.String("out", "", "picture to write, .png or .svg (default: curves.png in the run directory, or in the working directory for several runs)")
		metrics := fs.StringSlice("metrics", nil, "metrics to draw, by their names in metrics.jsonl (default: loss, val_loss, reward, KL, entropy, clip ratio, accuracy, ... where present)")
		return func(args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%w: plot needs at least one run directory or metrics.jsonl", errUsage)
			}
			runs := make([]*plot.Run, len(args))
			for i, a := range args {
				r, err := plot.Load(a)
				if err != nil {
					return err
				}
				for _, msg := range r.Skipped() {
					fmt.Fprintln(os.Stderr, msg)
				}
				runs[i] = r
			}
			names, err := plot.Pick(runs, *metrics)
			if err != nil {
				return err
			}
			path := *out
			if path == "" {
				path = "curves.png"
				if len(runs) == 1 {
					path = filepath.Join(filepath.Dir(runs[0].Path), "curves.png")
				}
			}
			if err := plot.Draw(runs, names, path); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (%d panels: %v)\n", path, len(names), names)
			return nil
		}
	}}
}

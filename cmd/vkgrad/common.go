package main

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/device"
	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// commonFlags are on every subcommand that computes.
type commonFlags struct {
	device      string
	threads     int
	logJSON     bool
	quiet       bool
	distributed bool
}

func addCommonFlags(fs *pflag.FlagSet) *commonFlags {
	c := &commonFlags{}
	fs.StringVar(&c.device, "device", "auto", "where to compute: auto (a GPU through Vulkan if present, else the CPU), cpu, vulkan, vulkan:N")
	fs.IntVar(&c.threads, "threads", 0, "CPU threads (0: all cores)")
	fs.BoolVar(&c.logJSON, "log-json", false, "write logs to stderr as JSON lines instead of text")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "log warnings and errors only")
	return c
}

// addDistributedFlag registers --distributed on the commands that train data-parallel.
func (c *commonFlags) addDistributedFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&c.distributed, "distributed", false, "join a data-parallel MPI job (automatic when started by mpirun, mpiexec or srun)")
}

func (c *commonFlags) logger() zerolog.Logger {
	var w io.Writer = os.Stderr
	if !c.logJSON {
		w = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly, NoColor: !progress.IsTerminal(os.Stderr)}
	}
	level := zerolog.InfoLevel
	if c.quiet {
		level = zerolog.WarnLevel
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// backend opens the device (device.OpenLogged).
func (c *commonFlags) backend(log zerolog.Logger) (tensor.Backend, error) {
	return device.OpenLogged(c.device, c.threads, log)
}

// addOptimizerFlags binds the learning rate, its schedule, weight decay and clipping, the same
// flags in every training command.
func addOptimizerFlags(fs *pflag.FlagSet, s *optim.Settings) {
	fs.Float64Var(&s.LR, "lr", s.LR, "peak learning rate")
	fs.Float64Var(&s.MinLR, "min-lr", s.MinLR, "learning rate at the end of the cosine decay (equal to --lr: constant)")
	fs.IntVar(&s.Warmup, "warmup", s.Warmup, "steps of linear learning-rate warmup")
	fs.Float64Var(&s.WeightDecay, "weight-decay", s.WeightDecay, "AdamW weight decay (applied to every parameter, as llm.c does)")
	fs.Float64Var(&s.MaxGradNorm, "clip", s.MaxGradNorm, "clip the global gradient norm to this (0: off)")
}

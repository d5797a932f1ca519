package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/llmc/verify"
)

// verifyCommand is `vkgrad verify`.
func verifyCommand() command {
	return command{name: "verify", summary: "check vkgrad's math against a reference (verify llmc: llm.c's GPT-2)", setup: func(fs *pflag.FlagSet) func([]string) error {
		common := addCommonFlags(fs)
		var opt verify.Options
		fs.StringVar(&opt.ModelPath, "model", "", "llm.c model checkpoint (gpt2_124M.bin or similar), required")
		fs.StringVar(&opt.StatePath, "state", "", "llm.c debug state (gpt2_124M_debug_state.bin or similar), required")
		fs.StringVar(&opt.LossesPath, "losses", "", "expected loss before each AdamW step, one per line (optional)")
		fs.Float32Var(&opt.LR, "lr", verify.DefaultLR, "learning rate the expected losses were made with")
		fs.Float32Var(&opt.WeightDecay, "weight-decay", 0, "weight decay the expected losses were made with")
		fs.Float32Var(&opt.WeightDecay, "wd", 0, "weight decay the expected losses were made with")
		fs.MarkDeprecated("wd", "use --weight-decay")
		return func(args []string) error {
			if len(args) != 1 || args[0] != "llmc" {
				return fmt.Errorf("usage: vkgrad verify llmc --model M --state S [--losses L] [--lr X] [--wd Y] [--device D]")
			}
			if opt.ModelPath == "" || opt.StatePath == "" {
				return fmt.Errorf("verify llmc needs --model and --state")
			}
			for flag, path := range map[string]string{"--model": opt.ModelPath, "--state": opt.StatePath, "--losses": opt.LossesPath} {
				if st, err := os.Stat(path); err == nil && st.IsDir() {
					return fmt.Errorf("%s %s is a directory: give the llm.c file itself (e.g. gpt2_124M.bin for --model, gpt2_124M_debug_state.bin for --state)", flag, path)
				}
			}
			log := common.logger()
			be, err := common.backend(log)
			if err != nil {
				return err
			}
			r, err := verify.LLMC(be, opt)
			if err != nil {
				return err
			}
			printReport(stdout, r)
			if !r.OK() {
				return fmt.Errorf("%d comparison(s) past tolerance", len(r.Failures))
			}
			return nil
		}
	}}
}

func printReport(w io.Writer, r *verify.Report) {
	status := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(w, "model %v, batch B=%d T=%d\n", r.Config, r.B, r.T)
	fmt.Fprintf(w, "%-10s max |diff| %.3e  (tolerance %.0e)  %s\n", "logits", r.LogitsMaxDiff, verify.LogitsTol, status(r.LogitsMaxDiff <= verify.LogitsTol))
	lossDiff := float64(r.Loss - r.RefLoss)
	if lossDiff < 0 {
		lossDiff = -lossDiff
	}
	fmt.Fprintf(w, "%-10s %.8f vs llm.c %.8f, |diff| %.3e  (tolerance %.0e)  %s\n", "loss", r.Loss, r.RefLoss, lossDiff, verify.LossTol, status(lossDiff <= verify.LossTol))
	fmt.Fprintf(w, "gradients  max |diff| / max(1, max|ref|), tolerance %.0e:\n", verify.GradTol)
	for _, g := range r.Grads {
		fmt.Fprintf(w, "  %-9s %.3e  (max |diff| %.3e, max |ref| %.3e)  %s\n", g.Name, g.NormalisedDiff, g.MaxAbsDiff, g.RefMaxAbs, status(g.NormalisedDiff <= verify.GradTol))
	}
	if len(r.RefStepLosses) > 0 {
		fmt.Fprintf(w, "%d AdamW steps:\n", len(r.RefStepLosses))
		for i := range r.StepLosses {
			d := float64(r.StepLosses[i] - r.RefStepLosses[i])
			if d < 0 {
				d = -d
			}
			fmt.Fprintf(w, "  step %2d  loss %.6f  llm.c %.6f  |diff| %.3e\n", i, r.StepLosses[i], r.RefStepLosses[i], d)
		}
		fmt.Fprintf(w, "%-10s max |diff| %.3e  (tolerance %.0e)  %s\n", "steps", r.StepMaxDiff, verify.StepLossTol, status(r.StepMaxDiff <= verify.StepLossTol))
	}
	if r.OK() {
		fmt.Fprintln(w, "PASS: matches llm.c")
	} else {
		for _, f := range r.Failures {
			fmt.Fprintln(w, "FAIL:", f)
		}
	}
}

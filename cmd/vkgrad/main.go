// Command vkgrad trains and RL-fine-tunes GPT-2 and Llama-family models on the CPU or Vulkan.
//
// It trains, fine-tunes (SFT, GRPO, PPO, in environments too), samples, evaluates and verifies
// models; `vkgrad help` lists the commands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/cluster"
)

// command is one subcommand: its flags are registered on fs by setup, which returns the action.
type command struct {
	name, summary string
	setup         func(fs *pflag.FlagSet) func(args []string) error
	// usage, when set, replaces the "vkgrad name [flags]" line of the help (subcommands, say).
	usage string
}

// commands are vkgrad's subcommands, in the order the help lists them: training, fine-tuning,
// using a model, then tools.
var commands = []command{
	trainCommand(),
	sftCommand(),
	grpoCommand(),
	ppoCommand(),
	sampleCommand(),
	rolloutCommand(),
	evalCommand(),
	exportCommand(),
	tokenizeCommand(),
	plotCommand(),
	benchCommand(),
	verifyCommand(),
	devicesCommand(),
	doctorCommand(),
	versionCommand(),
}

// lookup finds a command by name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "vkgrad trains and fine-tunes GPT-2 and Llama-family models on the CPU or any Vulkan GPU.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: vkgrad <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'vkgrad <command> --help' for the flags of a command, 'vkgrad --version' for the version.")
}

// stdout receives a command's results (logs go to stderr); tests capture it.
var stdout io.Writer = os.Stdout

// errUsage marks errors already explained by the flag parser.
var errUsage = errors.New("usage")

func run(args []string, out, stderr io.Writer) error {
	stdout = out
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return run([]string{args[1], "--help"}, out, stderr)
		}
		usage(out)
		return nil
	}
	if args[0] == "--version" || args[0] == "-v" {
		return run([]string{"version"}, out, stderr)
	}
	name := args[0]
	cmd, ok := lookup(name)
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", name)
	}
	fs := pflag.NewFlagSet("vkgrad "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	action := cmd.setup(fs)
	addRevisionFlag(fs)
	fs.Usage = func() {
		usage := cmd.usage
		if usage == "" {
			usage = fmt.Sprintf("vkgrad %s [flags]", name)
		}
		fmt.Fprintf(stderr, "vkgrad %s: %s\n\nUsage: %s\n\nFlags:\n%s", name, cmd.summary, usage, fs.FlagUsages())
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := resolveModelFlags(fs, stderr); err != nil {
		return err
	}
	return action(fs.Args())
}

func main() {
	tuneGC()
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// exitCode prints the command's error, if any, leaves the MPI job the process joined (aborting it
// after an error, once the error is read) and returns the process's exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		if err = joined.Leave(false); err == nil {
			return 0
		}
		err = fmt.Errorf("leaving the MPI job: %w", err)
	}
	printError(err, stderr)
	if errors.As(err, new(cluster.AgreedStop)) {
		joined.Leave(false)
		return 1
	}
	if f, ok := stderr.(*os.File); ok && joined != nil {
		waitRead(f)
	}
	joined.Leave(true)
	return 1
}

// printError writes err as vkgrad's last word, naming the rank in an MPI job of several.
func printError(err error, stderr io.Writer) {
	msg := err.Error()
	if errors.Is(err, errUsage) {
		msg = strings.TrimPrefix(msg, errUsage.Error()+": ")
	}
	fmt.Fprintf(stderr, "vkgrad: %s%s\n", joined.ErrorPrefix(), msg)
}

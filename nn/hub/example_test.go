package hub_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/nn/hub"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// Resolve a model name to a directory, from the Hugging Face cache or the Hub, then load it.
// An existing local directory of the same name would be returned as it is.
func ExampleResolve() {
	dir, err := hub.Resolve(context.Background(), "Qwen/Qwen3-0.6B", hub.Options{
		Revision: "main",    // a branch, tag or commit
		Progress: os.Stderr, // a progress bar while the weights download
	})
	if err != nil {
		fmt.Println(err) // names the missing file, the refused token, the unknown revision...
		return
	}
	m, err := llama.Load(cpu.New(), dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Config.Architecture)
}

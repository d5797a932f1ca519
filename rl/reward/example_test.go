package reward_test

import (
	"fmt"

	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/reward"
)

// Example scores two completions of a GSM8K-style problem with the numeric verifier and a
// format reward, weighted as `--reward numeric:1,format:0.2` would.
func Example() {
	terms, err := reward.Parse("numeric:1,format:0.2", reward.Options{FormatRegex: `(?s).*#### -?[0-9.,]+`})
	if err != nil {
		panic(err)
	}
	scorer, err := rl.NewCombined(terms...)
	if err != nil {
		panic(err)
	}
	meta := rl.Meta{"answer": "Natalia sold 48/2 = 24 clips in May... #### 72"}
	batch, err := scorer.ScoreBatch(
		[]string{"How many clips?", "How many clips?"},
		[]string{"48 + 24 = 72\n#### 72" + rl.EOSText, "I think 70."},
		[]rl.Meta{meta, meta})
	if err != nil {
		panic(err)
	}
	fmt.Println(batch.Total, batch.Means["numeric"])
	// Output: [1.2 0] 0.5
}

package env

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The test binary plays an environment process when VKGRAD_FAKE_ENV is set: it answers each
// reset with a user message naming what it got, each turn with a tool message per call (a
// call to "fail" or one that did not parse fails) or a user message echoing the text, reward
// turn+0.5, done after the third turn. A row {"fail": mode} makes the episode's first step
// misbehave the way mode says.
func fakeEnvProgram() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	modes := map[string]string{} // open episodes and their row's "fail"
	for in.Scan() {
		var req struct {
			ID      int64           `json:"id"`
			Op      string          `json:"op"`
			Episode string          `json:"episode"`
			Seed    uint64          `json:"seed"`
			Sample  int             `json:"sample"`
			Example json.RawMessage `json:"example"`
			Turn
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(3)
		}
		fmt.Fprintf(os.Stderr, "%s %s\n", req.Op, req.Episode)
		reply := map[string]any{"id": req.ID, "episode": req.Episode}
		switch req.Op {
		case "reset":
			var row struct {
				Fail string `json:"fail"`
			}
			json.Unmarshal(req.Example, &row)
			modes[req.Episode] = row.Fail
			reply["messages"] = []Message{{Role: "user", Content: fmt.Sprintf("episode %s seed %d sample %d example %s", req.Episode, req.Seed, req.Sample, req.Example)}}
			reply["tools"] = []any{}
		case "step":
			reply["turn"] = req.Index
			reply["reward"] = float64(req.Index) + 0.5
			reply["done"] = req.Index == 2
			reply["info"] = map[string]any{"pid": os.Getpid(), "open": len(modes)}
			var msgs []Message
			for _, c := range req.ToolCalls {
				msgs = append(msgs, Message{Role: "tool", Content: fmt.Sprintf("%s(%s)%s", c.Name, c.Arguments, c.Raw), Error: c.Malformed() || c.Name == "fail"})
			}
			if len(msgs) == 0 {
				msgs = []Message{{Role: "user", Content: fmt.Sprintf("turn %d: %s", req.Index, req.Text)}}
			}
			reply["messages"] = msgs
			if req.Index == 0 && misbehave(modes[req.Episode], req.ID, req.Episode, req.Index, reply) {
				continue
			}
		case "close":
			delete(modes, req.Episode)
			reply = map[string]any{"id": req.ID}
		}
		b, _ := json.Marshal(reply)
		fmt.Println(string(b))
	}
}

// misbehave changes a step's reply as mode says, or writes it already (true).
func misbehave(mode string, id int64, episode string, turn int, reply map[string]any) bool {
	switch mode {
	case "error":
		fmt.Printf(`{"id": %d, "episode": %q, "error": "boom"}`+"\n", id, episode)
		return true
	case "crash":
		fmt.Fprintln(os.Stderr, "crashing")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "not-json":
		fmt.Println("loading model...")
		return true
	case "stray":
		b, _ := json.Marshal(reply)
		fmt.Println(string(b))
		fmt.Println(string(b))
		return true
	case "other-episode":
		reply["episode"] = episode + "0"
	case "other-turn":
		reply["turn"] = turn + 1
	case "assistant":
		reply["messages"] = []Message{{Role: "assistant", Content: "hi"}}
	case "huge-reward":
		delete(reply, "reward")
		b, _ := json.Marshal(reply)
		fmt.Println(strings.Replace(string(b), "{", `{"reward":1e999,`, 1))
		return true
	case "misspelt":
		reply["rewards"] = reply["reward"]
	case "user-error":
		reply["messages"] = []Message{{Role: "user", Content: "x", Error: true}}
	}
	return false
}

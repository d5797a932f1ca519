package rlrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/load"
)

// A run's config.json is read back as written; --resume refuses another command's run and
// --init-task a run without task settings, each naming the file.
func TestReadRunMeta(t *testing.T) {
	dir := t.TempDir()
	meta := RunMeta{Command: "grpo", Init: "runs/sft", Tasks: DefaultTasks(), Config: []byte(`{"group_size":8}`), Run: &RunOptions{SaveEvery: 100}}
	if err := rundir.WriteConfig(dir, meta); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, rundir.Config)
	got, err := ReadRunMeta(cfgPath, "grpo")
	if err != nil {
		t.Fatal(err)
	}
	var algo struct {
		GroupSize int `json:"group_size"`
	}
	if err := json.Unmarshal(got.Config, &algo); err != nil || got.Init != "runs/sft" || got.Tasks.EvalSize != 200 || got.Run.SaveEvery != 100 || algo.GroupSize != 8 {
		t.Fatalf("read %+v (config %s), %v", got, got.Config, err)
	}
	if _, err := ReadRunMeta(cfgPath, "ppo"); err == nil || err.Error() != `--resume: `+cfgPath+`: command "grpo", want "ppo"` {
		t.Errorf("another command's run: %v", err)
	}
	if err := os.WriteFile(cfgPath, []byte(`{"command":"train"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, load.RunCheckpoint), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadInitMeta(dir); err == nil || !strings.Contains(err.Error(), "holds no task settings") {
		t.Errorf("a run without task settings: %v", err)
	}
}

// LoRA's settings default alpha to twice the rank and name the flags of a bad setting.
func TestLoRAConfig(t *testing.T) {
	if _, ok, err := (LoRA{}).Config(); ok || err != nil {
		t.Fatalf("no rank: ok %v, err %v; want no adapters", ok, err)
	}
	cfg, ok, err := LoRA{Rank: 4}.Config()
	if !ok || err != nil || cfg.Alpha != 8 || cfg.Rank != 4 {
		t.Fatalf("rank 4: %+v, %v, %v", cfg, ok, err)
	}
	if _, _, err := (LoRA{Rank: -1}).Config(); err == nil || !strings.HasPrefix(err.Error(), "--lora-rank -1:") {
		t.Errorf("rank -1: %v", err)
	}
}

package plot

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const metricsFile = `{"kind":"val","step":0,"val_loss":10.8}
{"kind":"train","step":2,"loss":9.5,"lr":0.001}
{"kind":"train","step":1,"loss":10.5,"lr":0.0005,"note":"text is ignored"}
{"kind":"grpo","step":3,"reward_mean":0.25,"kl_mean":null}
{"kind":"train","step":4,"lo`

func writeRun(t *testing.T, body string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadSortsByStepAndSkipsTornLines(t *testing.T) {
	r, err := Load(writeRun(t, metricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Torn != 1 {
		t.Errorf("torn lines = %d, want 1", r.Torn)
	}
	loss := r.Series["loss"]
	if len(loss) != 2 || loss[0] != (Point{1, 10.5}) || loss[1] != (Point{2, 9.5}) {
		t.Errorf("loss = %v, want steps 1 and 2 in order", loss)
	}
	if _, ok := r.Series["kl_mean"]; ok {
		t.Error("a null value must not make a point")
	}
	names, err := Pick([]*Run{r}, nil)
	if err != nil || strings.Join(names, ",") != "loss,val_loss,reward_mean" {
		t.Errorf("default metrics = %v, %v; want loss, val_loss, reward_mean (reward's older name)", names, err)
	}
	if _, err := Pick([]*Run{r}, []string{"kl"}); err == nil || !strings.Contains(err.Error(), `"kl"`) || !strings.Contains(err.Error(), "lr") {
		t.Errorf("an absent metric: %v, want an error naming it and listing what there is", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Errorf("a directory without metrics: %v", err)
	}
}

func TestDrawWritesPNGAndSVG(t *testing.T) {
	a, err := Load(writeRun(t, metricsFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(writeRun(t, `{"step":1,"loss":11}`+"\n"+`{"step":2,"loss":8}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pngPath := filepath.Join(dir, "c.png")
	if err := Draw([]*Run{a, b}, []string{"loss", "val_loss", "reward_mean"}, pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w <= h || h < 400 {
		t.Errorf("3 panels in 2 columns should be wider than tall and two rows high, got %dx%d", w, h)
	}
	svgPath := filepath.Join(dir, "c.svg")
	if err := Draw([]*Run{a, b}, []string{"loss"}, svgPath); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(svgPath)
	if !strings.HasPrefix(strings.TrimSpace(string(svg)), "<?xml") || !strings.Contains(string(svg), "<svg") {
		t.Errorf("not an SVG file: %.80s", svg)
	}
	if err := Draw([]*Run{a}, []string{"loss"}, filepath.Join(dir, "c.jpg")); err == nil {
		t.Error("a .jpg output should be refused")
	}
}

package plot

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// drawWithin draws runs to a PNG and fails if that takes over a minute (it used to hang).
func drawWithin(t *testing.T, runs []*Run, metrics []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "c.png")
	done := make(chan error, 1)
	go func() { done <- Draw(runs, metrics, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("drawing %v did not finish in a minute", metrics)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
}

// TestFaultExtremeValuesPlot: values of ±1e308 (whose span overflows), the strings a metrics
// writer puts for NaN and ±Inf, numbers beyond float64 and steps that are no step are drawn or
// skipped and counted; the picture is finished and valid.
func TestFaultExtremeValuesPlot(t *testing.T) {
	r, err := Load(writeRun(t, `{"step":1,"loss":1e308,"kl":-1e308,"both":1e308}
{"step":2,"loss":3,"kl":"NaN","both":-1e308}
{"step":3,"loss":2.5,"kl":"+Inf","both":1.7976931348623157e308}
{"step":4,"loss":"-Inf","kl":1e999,"both":-1.7976931348623157e308}
{"step":5,"loss":2,"kl":0.1,"both":1}
{"step":1e308,"loss":1}
{"step":"NaN","loss":1}
{"step":-1e999,"loss":1}
{"step":null,"loss":1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r.BadSteps != 4 {
		t.Errorf("bad steps = %d, want 4", r.BadSteps)
	}
	if r.NonFinite["kl"] != 3 || r.NonFinite["loss"] != 1 {
		t.Errorf("non-finite counts = %v, want kl 3 and loss 1", r.NonFinite)
	}
	if len(r.Series["loss"]) != 4 || len(r.Series["both"]) != 5 {
		t.Errorf("series = %v", r.Series)
	}
	said := strings.Join(r.Skipped(), "\n")
	for _, want := range []string{r.Path + ": skipped 4 lines whose step", "3 NaN or infinite values of kl", "1 NaN or infinite values of loss"} {
		if !strings.Contains(said, want) {
			t.Errorf("skipped lines say %q, want %q", said, want)
		}
	}
	drawWithin(t, []*Run{r}, []string{"loss", "kl", "both"})
	p, err := panel([]*Run{r}, "loss", 600)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max > 100 || !strings.Contains(p.Title.Text, "1 far values off the axis") || !strings.Contains(p.Title.Text, "1 NaN/Inf skipped") {
		t.Errorf("loss panel: axis to %v, title %q; want 1e308 off a loss axis and both counts said", p.Y.Max, p.Title.Text)
	}
}

// TestFaultAxisRange: the value axis has a finite, positive span for any finite values.
func TestFaultAxisRange(t *testing.T) {
	const big = math.MaxFloat64
	for _, vs := range [][]float64{
		{-1e308, 1e308}, {-big, big}, {big, big, big}, {-big}, {1e308, 3, 2.5, 2},
		{0, 0}, {1e10, 1e10 + 1e-6}, {5e-324, 1e-323}, {1, math.Nextafter(1, 2)}, {},
	} {
		lo, hi, off := axisRange(vs)
		if span := hi - lo; !(span > 0) || math.IsInf(span, 0) || off > len(vs) {
			t.Errorf("axisRange(%v) = %v, %v, %d", vs, lo, hi, off)
		}
	}
	if lo, hi, off := axisRange([]float64{1e308, 3, 2.5, 2, 0.001}); off != 1 || lo != 0.001 || hi != 3 {
		t.Errorf("a loss with one 1e308: axis %v..%v, %d off; want 0.001..3, 1 off", lo, hi, off)
	}
	if _, hi, off := axisRange([]float64{1, 1, 1, 900, 2}); off != 0 || hi != 900 {
		t.Errorf("a real spike must stay on the axis: to %v, %d off", hi, off)
	}
}

// TestFaultManyMetricNames: a file of ever-new metric names keeps at most maxMetrics series
// (and non-finite counts), counting the rest.
func TestFaultManyMetricNames(t *testing.T) {
	var b strings.Builder
	for i := range 3 * maxMetrics {
		fmt.Fprintf(&b, `{"step":%d,"m%d":1,"n%d":"NaN"}`+"\n", i, i, i)
	}
	r, err := Load(writeRun(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Series) != maxMetrics || len(r.NonFinite) != maxMetrics || r.Unread != 4*maxMetrics {
		t.Errorf("%d series, %d non-finite names, %d unread; want %d, %d, %d",
			len(r.Series), len(r.NonFinite), r.Unread, maxMetrics, maxMetrics, 4*maxMetrics)
	}
}

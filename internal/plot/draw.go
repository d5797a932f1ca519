package plot

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette tells runs apart; it repeats past eight runs.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255},
}

// dpi is the PNG's resolution; an SVG's lines are thinned for the same pixel columns.
const dpi = 110

// Draw writes one panel per metric (two columns), each run a line, to out: .png or .svg.
func Draw(runs []*Run, metrics []string, out string) error {
	ext := strings.ToLower(filepath.Ext(out))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("curves: %s: want a .png or .svg file", out)
	}
	const cols = 2
	rows := (len(metrics) + cols - 1) / cols
	w, h := 6*vg.Inch*cols, 3.2*vg.Inch*vg.Length(rows)
	var canvas vg.CanvasWriterTo
	if ext == ".svg" {
		canvas = vgsvg.New(w, h)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))}
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for i, m := range metrics {
		tile := tiles.At(dc, i%cols, i/cols)
		pixels := int(math.Ceil(tile.Max.X.Dots(dpi) - tile.Min.X.Dots(dpi)))
		p, err := panel(runs, m, pixels)
		if err != nil {
			return err
		}
		p.Draw(tile)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("curves: %w", err)
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("curves: writing %s: %w", out, err)
	}
	return f.Close()
}

// panel is one metric's plot, pixels wide: a line per run that has it, named in the legend
// when several do; each line thinned to what the pixels can show.
func panel(runs []*Run, metric string, pixels int) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "step"
	p.Add(plotter.NewGrid())
	xlo, xhi := math.Inf(1), math.Inf(-1)
	skipped := 0
	for _, r := range runs {
		if s := r.Series[metric]; len(s) > 0 {
			xlo, xhi = min(xlo, s[0].Step), max(xhi, s[len(s)-1].Step)
		}
		skipped += r.NonFinite[metric]
	}
	lines := make([][]Point, len(runs))
	var values []float64
	for i, r := range runs {
		lines[i] = Downsample(r.Series[metric], xlo, xhi, pixels)
		for _, pt := range lines[i] {
			values = append(values, pt.Value)
		}
	}
	ylo, yhi, off := axisRange(values)
	for i, r := range runs {
		s := lines[i]
		if len(s) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s))
		for j, pt := range s {
			// Values off the axis are drawn just past its edge, where they are clipped, so
			// that no coordinate overflows.
			xy[j].X, xy[j].Y = pt.Step, min(max(pt.Value, ylo-(yhi-ylo)), yhi+(yhi-ylo))
		}
		line, err := addLine(p, xy, palette[i%len(palette)])
		if err != nil {
			return nil, fmt.Errorf("curves: %s of %s: %w", metric, r.Name, err)
		}
		if len(s) == 1 {
			pts, _ := plotter.NewScatter(xy)
			pts.Color = line.Color
			p.Add(pts)
		}
		if len(runs) > 1 {
			p.Legend.Add(r.Name, line)
		}
	}
	p.Y.Min, p.Y.Max = ylo, yhi
	p.Title.Text = metric + note(off, skipped)
	p.Legend.Top = true
	return p, nil
}

// strokeLen is the most points stroked at once. The PNG rasterizer keeps each pixel row's
// cells in a list it walks for every new cell, so one stroke of a noisy line thousands of
// points long takes seconds; short strokes keep each row's list short.
const strokeLen = 64

// addLine adds a line through xy to p as strokes of at most strokeLen points, and returns
// the first for the legend. Strokes share two points, so that every point is inside one
// and joined there as in a single stroke (the PNG canvas draws butt ends).
func addLine(p *plot.Plot, xy plotter.XYs, c color.Color) (*plotter.Line, error) {
	var first *plotter.Line
	for i := 0; ; i += strokeLen - 2 {
		end := min(i+strokeLen, len(xy))
		line, err := plotter.NewLine(xy[i:end])
		if err != nil {
			return nil, err
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		p.Add(line)
		if first == nil {
			first = line
		}
		if end == len(xy) {
			return first, nil
		}
	}
}

// note says in a panel's title what it does not show.
func note(off, skipped int) string {
	var parts []string
	if off > 0 {
		parts = append(parts, fmt.Sprintf("%d far values off the axis", off))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d NaN/Inf skipped", skipped))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Axis limits. A value over farFactor times both the series' 90th-percentile magnitude and
// farFloor (a loss of 1e308 among losses of 3) is left off the axis, its line running off the
// edge, so that one overflowed step does not flatten the rest; limits stay within ±maxAxis so
// that their span is a finite float64.
const (
	farFactor = 1e6
	farFloor  = 1e6
	maxAxis   = 1e300
)

// axisRange returns the value axis's limits for vs and how many values it leaves off.
func axisRange(vs []float64) (lo, hi float64, off int) {
	if len(vs) == 0 {
		return -1, 1, 0
	}
	mags := make([]float64, len(vs))
	for i, v := range vs {
		mags[i] = math.Abs(v)
	}
	slices.Sort(mags)
	fence := min(max(farFactor*mags[(len(mags)-1)*9/10], farFloor), maxAxis)
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.Abs(v) > fence {
			off++
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo > hi { // all beyond ±maxAxis: show their side of it
		lo, hi = max(slices.Min(vs), -maxAxis), min(slices.Max(vs), maxAxis)
	}
	// Widen a span too narrow for float64 to place ticks in.
	if mid := lo/2 + hi/2; hi-lo <= 1e-12*math.Abs(mid) || hi == lo {
		d := max(1e-6*math.Abs(mid), 1e-300)
		if mid == 0 {
			d = 1
		}
		lo, hi = mid-d, mid+d
	}
	return lo, hi, off
}

// DrawRun writes curves.png in a finished run's directory (its default metrics) and
// returns its path; a picture that cannot be drawn is reported, not fatal: the run is done.
func DrawRun(runDir string) string {
	r, err := Load(runDir)
	if err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	names, err := Pick([]*Run{r}, nil)
	if err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	path := filepath.Join(runDir, "curves.png")
	if err := Draw([]*Run{r}, names, path); err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	return path
}

package curves

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
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
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for i, m := range metrics {
		p, err := panel(runs, m)
		if err != nil {
			return err
		}
		p.Draw(tiles.At(dc, i%cols, i/cols))
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

// panel is one metric's plot: a line per run that has it, named in the legend when several do.
func panel(runs []*Run, metric string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = metric
	p.X.Label.Text = "step"
	p.Add(plotter.NewGrid())
	for i, r := range runs {
		s := r.Series[metric]
		if len(s) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s))
		for j, pt := range s {
			xy[j].X, xy[j].Y = pt.Step, pt.Value
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("curves: %s of %s: %w", metric, r.Name, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		if len(s) == 1 {
			pts, _ := plotter.NewScatter(xy)
			pts.Color = line.Color
			p.Add(pts)
		}
		if len(runs) > 1 {
			p.Legend.Add(r.Name, line)
		}
	}
	p.Legend.Top = true
	return p, nil
}

package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// lineColors are the series colours, in scenario order: ten that stay
// apart from one another (the Tableau 10 palette).
var lineColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff},
	{0xd6, 0x27, 0x28, 0xff},
	{0xff, 0x7f, 0x0e, 0xff},
	{0x2c, 0xa0, 0x2c, 0xff},
	{0x94, 0x67, 0xbd, 0xff},
	{0x8c, 0x56, 0x4b, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
	{0xe3, 0x77, 0xc2, 0xff},
	{0xbc, 0xbd, 0x22, 0xff},
	{0x7f, 0x7f, 0x7f, 0xff},
}

// yTicks labels the minor ticks of plot.DefaultTicks as well: its three or
// so labelled values are too few to read a latency off.
var yTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.IsMinor() {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', 6, 64)
		}
	}
	return ticks
})

// writePlot draws p50 latency against concurrency, one line per scenario,
// as a PNG. The measured concurrencies sit evenly spaced on the x axis;
// the legend goes below the plot, in two columns, so it hides no data.
func (r *results) writePlot(path string) error {
	// 750×465 pt is 1000×620 px at vgimg's 96 dpi.
	width, height := vg.Points(750), vg.Points(465)

	p := newLatencyPlot(r.opts.conc)
	legends := [2]plot.Legend{plot.NewLegend(), plot.NewLegend()}
	for i := range legends {
		legends[i].Top, legends[i].Left = true, true
		legends[i].Padding = vg.Points(3)
	}
	points, err := r.addSeries(p, &legends)
	if err != nil {
		return err
	}
	if points == 0 {
		return fmt.Errorf("plot: nothing measured")
	}
	// Categories sit half a step in from either edge; latency from 0 up.
	p.X.Min, p.X.Max = -0.5, float64(len(r.opts.conc))-0.5
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.05

	img := vgimg.New(width, height)
	drawWithLegends(draw.New(img), p, &legends)
	return writePNG(path, img)
}

// newLatencyPlot returns the plot's frame: title, axis labels, one x tick
// per concurrency in conc, and a horizontal grid.
func newLatencyPlot(conc []int) *plot.Plot {
	p := plot.New()
	p.Title.Text = "p50 latency per tools/call vs concurrency: direct, through switchboard, through TBXark/mcp-proxy"
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = "concurrent workers (c)"
	p.Y.Label.Text = "p50 latency (ms)"
	p.Y.Tick.Marker = yTicks

	ticks := make([]plot.Tick, len(conc))
	for i, c := range conc {
		ticks[i] = plot.Tick{Value: float64(i), Label: strconv.Itoa(c)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)

	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	return p
}

// addSeries adds one line per scenario that has a p50, each entered in
// the first legend column for the first half of the scenarios and in the
// second for the rest. It returns how many points it drew.
func (r *results) addSeries(p *plot.Plot, legends *[2]plot.Legend) (int, error) {
	perColumn := (len(r.scenarios) + 1) / 2
	points := 0
	for si, sc := range r.scenarios {
		var xys plotter.XYs
		for i, c := range r.opts.conc {
			if s := r.summary(sc.id, c); s != nil && !math.IsNaN(s.p50) {
				xys = append(xys, plotter.XY{X: float64(i), Y: s.p50})
			}
		}
		if len(xys) == 0 {
			continue
		}
		points += len(xys)
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return 0, err
		}
		col := lineColors[si%len(lineColors)]
		l.Color, l.Width = col, vg.Points(2)
		pts.Color, pts.Shape, pts.Radius = col, plotutil.Shape(si), vg.Points(3.5)
		p.Add(l, pts)
		legends[si/perColumn].Add(sc.name, l, pts)
	}
	return points, nil
}

// drawWithLegends draws p on dc with room below it for the legend columns,
// which share the width of the data area above them.
func drawWithLegends(dc draw.Canvas, p *plot.Plot, legends *[2]plot.Legend) {
	margin := vg.Points(10)
	legendH := max(legends[0].Rectangle(dc).Size().Y, legends[1].Rectangle(dc).Size().Y)
	// Crop takes the top and right insets as negative lengths.
	plotC := draw.Crop(dc, margin, -margin, legendH+2*margin, -margin)
	p.Draw(plotC)

	data := p.DataCanvas(plotC)
	colW := data.Size().X / 2
	for i := range legends {
		x := data.Min.X + vg.Length(i)*colW
		c := dc
		c.Rectangle = vg.Rectangle{
			Min: vg.Point{X: x, Y: margin},
			Max: vg.Point{X: x + colW, Y: margin + legendH},
		}
		legends[i].Draw(c)
	}
}

// writePNG writes img to path as a PNG.
func writePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

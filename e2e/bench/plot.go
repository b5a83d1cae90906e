package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strings"
)

// lineColors are the series colours, in scenario order: direct stdio,
// through stdio (policy, plain, the GC comparison), direct HTTP, through
// HTTP (policy, plain).
var lineColors = []color.RGBA{
	{0x1f, 0x4e, 0xb4, 0xff},
	{0xd6, 0x27, 0x28, 0xff},
	{0xff, 0x8c, 0x00, 0xff},
	{0x2c, 0xa0, 0x2c, 0xff},
	{0x94, 0x3c, 0xc4, 0xff},
	{0x8c, 0x56, 0x4b, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

// writePlot draws p50 latency against concurrency, one line per scenario,
// as a PNG.
func (r *results) writePlot(path string) error {
	const (
		w, h                     = 1000, 620
		left, right, top, bottom = 90, 30, 70, 80
		scale                    = 2
	)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	black := color.RGBA{0x20, 0x20, 0x20, 0xff}
	grey := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}

	ymax := 0.0
	for _, sc := range r.scenarios {
		for _, c := range r.opts.conc {
			if s := r.summary(sc.id, c); s != nil && !math.IsNaN(s.p50) {
				ymax = math.Max(ymax, s.p50)
			}
		}
	}
	if ymax == 0 {
		return fmt.Errorf("plot: nothing measured")
	}
	step := niceStep(ymax * 1.08 / 6)
	ytop := math.Ceil(ymax*1.08/step) * step
	x0, x1, y0, y1 := left, w-right, h-bottom, top
	ypix := func(v float64) int { return y0 - int(math.Round(v/ytop*float64(y0-y1))) }
	n := len(r.opts.conc)
	xpix := func(i int) int { return x0 + (2*i+1)*(x1-x0)/(2*n) }

	title := "p50 latency per tools/call vs concurrency: direct and through switchboard"
	drawText(img, (w-textWidth(title, scale))/2, 20, title, scale, black)
	for v := 0.0; v <= ytop+step/2; v += step {
		y := ypix(v)
		line(img, x0, y, x1, y, grey, 1)
		label := trimFloat(v)
		drawText(img, x0-10-textWidth(label, scale), y-7, label, scale, black)
	}
	for i, c := range r.opts.conc {
		label := fmt.Sprint(c)
		drawText(img, xpix(i)-textWidth(label, scale)/2, y0+12, label, scale, black)
		line(img, xpix(i), y0, xpix(i), y0+6, black, 1)
	}
	line(img, x0, y0, x1, y0, black, 2)
	line(img, x0, y0, x0, y1, black, 2)
	xl := "concurrent workers (c)"
	drawText(img, (x0+x1-textWidth(xl, scale))/2, y0+44, xl, scale, black)
	drawText(img, 10, top-30, "ms", scale, black)

	ly := top + 10
	for si, sc := range r.scenarios {
		col := lineColors[si%len(lineColors)]
		px, py := -1, -1
		for i, c := range r.opts.conc {
			s := r.summary(sc.id, c)
			if s == nil || math.IsNaN(s.p50) {
				px = -1
				continue
			}
			x, y := xpix(i), ypix(s.p50)
			if px >= 0 {
				line(img, px, py, x, y, col, 3)
			}
			fillRect(img, x-4, y-4, x+4, y+4, col)
			px, py = x, y
		}
		name := strings.ReplaceAll(sc.name, "→", "->")
		fillRect(img, x0+20, ly+3, x0+44, ly+9, col)
		drawText(img, x0+52, ly, name, scale, black)
		ly += 22
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func fillRect(img *image.RGBA, xa, ya, xb, yb int, c color.Color) {
	draw.Draw(img, image.Rect(xa, ya, xb+1, yb+1), image.NewUniform(c), image.Point{}, draw.Src)
}

// line draws a segment of the given thickness (Bresenham, square pen).
func line(img *image.RGBA, xa, ya, xb, yb int, c color.Color, thick int) {
	dx, dy := abs(xb-xa), -abs(yb-ya)
	sx, sy := sign(xb-xa), sign(yb-ya)
	e := dx + dy
	for {
		fillRect(img, xa-thick/2, ya-thick/2, xa-thick/2+thick-1, ya-thick/2+thick-1, c)
		if xa == xb && ya == yb {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			xa += sx
		}
		if e2 <= dx {
			e += dx
			ya += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

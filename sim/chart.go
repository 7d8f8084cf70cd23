package sim

import (
	"image/color"
	"io"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// strategyColors gives every strategy the same color in every chart.
var strategyColors = map[string]color.RGBA{
	AWSStandard:   {R: 0x99, G: 0x99, B: 0x99, A: 0xff},
	AWSAdaptive:   {R: 0xe6, G: 0x9f, B: 0x00, A: 0xff},
	Static:        {R: 0x56, G: 0xb4, B: 0xe9, A: 0xff},
	Failsafe:      {R: 0xcc, G: 0x79, B: 0xa7, A: 0xff},
	CloudgAIMD:    {R: 0xd5, G: 0x5e, B: 0x00, A: 0xff},
	CloudgGoodput: {R: 0x00, G: 0x9e, B: 0x73, A: 0xff},
}

// WriteChart writes a PNG with three panels over the run's time, one line
// per strategy: the requests sent per second, the requests the provider
// rejected per second (both as 5-second moving averages), and the client's
// rate limit where the strategy exposes one; the true capacity is the
// dashed black line.
func WriteChart(w io.Writer, sc *Scenario, results []*Result) error {
	n := 0
	for _, r := range results {
		n = max(n, len(r.Series))
	}
	truth := make(plotter.XYs, 0, n)
	for i := 0; i < n; i++ {
		truth = append(truth, plotter.XY{X: float64(i), Y: sc.TrueRate(time.Duration(i) * time.Second)})
	}

	sent := newPanel("requests sent per second (5 s average)", "requests/s")
	rejected := newPanel("requests rejected (throttled) per second (5 s average)", "rejected/s")
	limit := newPanel("client rate limit (adaptive rate; sum over actions)", "rps")
	for _, p := range []*plot.Plot{sent, limit} {
		if err := addLine(p, "true capacity", truth, color.RGBA{A: 0xff}, true); err != nil {
			return err
		}
	}
	for _, r := range results {
		c := strategyColors[r.Strategy]
		var s, rj, lim plotter.XYs
		for i := range r.Series {
			var a, b float64
			k := 0
			for j := max(0, i-4); j <= i; j++ {
				a += float64(r.Series[j].Sent)
				b += float64(r.Series[j].Throttled)
				k++
			}
			x := float64(i)
			s = append(s, plotter.XY{X: x, Y: a / float64(k)})
			rj = append(rj, plotter.XY{X: x, Y: b / float64(k)})
			if v := r.Series[i].Rate; !math.IsNaN(v) {
				lim = append(lim, plotter.XY{X: x, Y: v})
			}
		}
		if err := addLine(sent, r.Strategy, s, c, false); err != nil {
			return err
		}
		if err := addLine(rejected, r.Strategy, rj, c, false); err != nil {
			return err
		}
		if len(lim) > 0 {
			if err := addLine(limit, r.Strategy, lim, c, false); err != nil {
				return err
			}
		}
	}
	// The y axes stop at three times the highest true capacity (and the
	// highest rate limit): a strategy that floods the provider runs off the
	// top rather than flattening every other line.
	top := 0.0
	for _, xy := range truth {
		top = max(top, xy.Y)
	}
	lim := top
	for _, r := range results {
		for _, s := range r.Series {
			if !math.IsNaN(s.Rate) {
				lim = max(lim, s.Rate)
			}
		}
	}
	sent.Y.Max, rejected.Y.Max, limit.Y.Max = 3*top, 3*top, 1.15*lim
	for _, p := range []*plot.Plot{sent, rejected, limit} {
		p.X.Max = float64(n)
	}
	sent.Title.Text = "cloudg-sim " + sc.Name + ": " + sent.Title.Text

	const width, height = 12 * vg.Inch, 13 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	plots := [][]*plot.Plot{{sent}, {rejected}, {limit}}
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10), PadY: vg.Points(12)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

func newPanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "simulated time (s)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.X.Tick.Marker = niceTicks{n: 12}
	p.Y.Tick.Marker = niceTicks{n: 6}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// niceTicks labels about n ticks at round values (1, 2, 2.5 or 5 times a
// power of ten), printed without needless decimals, with an unlabelled
// tick halfway between.
type niceTicks struct{ n int }

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / float64(max(1, t.n))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i*step/2 <= hi; i++ {
		v := i * step / 2
		if math.Mod(i, 2) == 0 {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		} else {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.RGBA, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

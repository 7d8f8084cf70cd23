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

// strategyColors gives every strategy the same color in every chart, from
// a qualitative palette whose hues are told apart at a glance. A strategy
// missing here would be drawn in the zero color, transparent.
var strategyColors = map[string]color.RGBA{
	AWSStandard:      {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	AWSAdaptive:      {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	Static:           {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	Failsafe:         {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	CloudgAIMD:       {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	CloudgGoodput:    {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	CloudgAWS:        {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	CloudgAWSGoodput: {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	Oracle:           {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red

	// An estate's schedulers, which a chart draws only beside each
	// other.
	Plain:         {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	PlainAdaptive: {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	Shuffle:       {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	RandomQueue:   {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	PoolAIMD:      {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	PoolGoodput:   {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	PoolOracle:    {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
}

var black = color.RGBA{A: 0xff}

// WriteChart writes a PNG with four panels over the run's time, one line
// per strategy, each axis fitted to its data:
//
//   - calls completed (solid) and lost (dashed), cumulative, beside the
//     ideal (dashed black: every token the provider has, used at once,
//     each action's up to its own calls);
//   - requests sent per second (5-second moving average, log scale, so
//     that a strategy that floods the provider does not flatten the
//     others);
//   - requests rejected, cumulative (log scale);
//   - the client's rate limit where the strategy exposes one, beside the
//     true capacity (dashed black).
//
// A nil run (one not made) is left out.
func WriteChart(w io.Writer, sc *Scenario, results []*Result) error {
	results = runsMade(results)
	n := 0
	for _, r := range results {
		n = max(n, len(r.Series))
	}
	truth := make(plotter.XYs, 0, n)
	ideal := make(plotter.XYs, 0, n+1)
	ideal = append(ideal, plotter.XY{X: 0, Y: 0})
	for i := 0; i < n; i++ {
		truth = append(truth, plotter.XY{X: float64(i), Y: sc.TrueRate(time.Duration(i) * time.Second)})
		ideal = append(ideal, plotter.XY{X: float64(i + 1), Y: sc.idealCalls(time.Duration(i+1) * time.Second)})
	}

	calls := newPanel("calls completed (solid) and lost (dashed), cumulative; ideal dashed black", "calls")
	sent := newPanel("requests sent per second (5 s average, log scale)", "requests/s")
	rejected := newPanel("requests rejected (throttled), cumulative (log scale)", "rejected")
	limit := newPanel("client rate limit (adaptive rate; sum over actions); true capacity dashed black", "rps")
	for _, p := range []*plot.Plot{sent, rejected} {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	calls.Title.Text = "cloudg-sim " + sc.Name + " (seed " + strconv.FormatUint(sc.Seed, 10) + "): " + calls.Title.Text
	calls.Legend.Top, calls.Legend.Left = false, false
	calls.Legend.YOffs = vg.Points(24)
	if err := addLine(calls, "ideal", ideal, black, true); err != nil {
		return err
	}
	if err := addLine(limit, "", truth, black, true); err != nil {
		return err
	}
	if err := addLine(sent, "", truth, black, true); err != nil {
		return err
	}

	const floorSent, floorRejected = 0.1, 0.5 // where a zero sits on a log axis
	topCalls, topSent, topRejected, topRate := float64(sc.Workload.Calls), 1.0, 1.0, 0.0
	for _, xy := range truth {
		topRate, topSent = max(topRate, xy.Y), max(topSent, xy.Y)
	}
	for _, r := range results {
		c := strategyColors[r.Strategy]
		var done, lost, s, rj, lim plotter.XYs
		var cd, cl, cr float64
		done, lost = append(done, plotter.XY{}), append(lost, plotter.XY{})
		for i, smp := range r.Series {
			var a float64
			k := 0
			for j := max(0, i-4); j <= i; j++ {
				a += float64(r.Series[j].Sent)
				k++
			}
			x := float64(i)
			cd, cl, cr = cd+float64(smp.Done), cl+float64(smp.Lost), cr+float64(smp.Throttled)
			done = append(done, plotter.XY{X: x + 1, Y: cd})
			lost = append(lost, plotter.XY{X: x + 1, Y: cl})
			avg := a / float64(k)
			s = append(s, plotter.XY{X: x, Y: math.Max(avg, floorSent)})
			rj = append(rj, plotter.XY{X: x + 1, Y: math.Max(cr, floorRejected)})
			topSent, topRejected = max(topSent, avg), max(topRejected, cr)
			if v := smp.Rate; !math.IsNaN(v) {
				lim = append(lim, plotter.XY{X: x, Y: v})
				topRate = max(topRate, v)
			}
		}
		if err := addLine(calls, r.Strategy, done, c, false); err != nil {
			return err
		}
		if err := addLine(calls, "", lost, c, true); err != nil {
			return err
		}
		if err := addLine(sent, "", s, c, false); err != nil {
			return err
		}
		if err := addLine(rejected, "", rj, c, false); err != nil {
			return err
		}
		if len(lim) > 0 {
			if err := addLine(limit, "", lim, c, false); err != nil {
				return err
			}
		}
	}
	calls.Y.Max = 1.04 * topCalls
	sent.Y.Min, sent.Y.Max = floorSent, 1.3*topSent
	rejected.Y.Min, rejected.Y.Max = floorRejected, 1.3*topRejected
	limit.Y.Max = 1.08 * topRate
	for _, p := range []*plot.Plot{calls, sent, rejected, limit} {
		p.X.Max = float64(n)
	}

	const width, height = 12 * vg.Inch, 16 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	plots := [][]*plot.Plot{{calls}, {sent}, {rejected}, {limit}}
	tiles := draw.Tiles{Rows: 4, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10), PadY: vg.Points(12)}
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

// addLine draws xys on p, in the legend under name unless it is empty.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.RGBA, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.6)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}

// idealCalls is the calls the ideal client has completed in the first d of
// a run, the chart's ideal line: each action's capacity up to its own
// work, since the tokens of an action whose calls are done serve no other
// action's (an estate's scopes hold many more than its calls).
func (s *Scenario) idealCalls(d time.Duration) float64 {
	_, _, worked := s.fluid(d, false)
	return worked
}

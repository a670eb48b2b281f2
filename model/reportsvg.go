package model

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// The report's plots: inline SVG of a fixed size. Every text is placed so
// that it lies inside the picture (textBox estimates its extent), so no
// tick label is clipped at an edge.

const (
	svgW, svgH = 640, 360
	padL, padB = 50, 36
	padT, padR = 14, 32
	fontSize   = 11
)

func plotX(v, lo, hi float64) float64 {
	return padL + (v-lo)/(hi-lo)*float64(svgW-padL-padR)
}

func plotY(v, lo, hi float64) float64 {
	return float64(svgH-padB) - (v-lo)/(hi-lo)*float64(svgH-padB-padT)
}

// textWidth estimates the width of s at the plots' font size (a character
// is at most about 0.62 em wide in the sans-serif fonts a browser picks).
func textWidth(s string) float64 {
	return float64(len([]rune(s))) * 0.62 * fontSize
}

// text writes s centred on x, or anchored at the side that keeps it inside
// the picture when centring would cross an edge.
func text(b *strings.Builder, x, y float64, s string) {
	anchor, w := "middle", textWidth(s)
	switch {
	case x+w/2 > svgW-2:
		anchor, x = "end", math.Min(x, svgW-2)
	case x-w/2 < 2:
		anchor, x = "start", math.Max(x, 2)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x, y, anchor, html.EscapeString(s))
}

func axes(b *strings.Builder, xlo, xhi, ylo, yhi float64, xlab, ylab string, xticks, yticks []float64, xfmt func(float64) string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-size="%d">`, svgW, svgH, svgW, svgH, fontSize)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, svgH-padB, svgW-padR, svgH-padB)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, padT, padL, svgH-padB)
	for _, t := range xticks {
		text(b, plotX(t, xlo, xhi), svgH-padB+14, xfmt(t))
	}
	for _, t := range yticks {
		y := plotY(t, ylo, yhi)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`, padL, y, svgW-padR, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+4, trimFloat(t))
	}
	text(b, float64(svgW+padL)/2, svgH-4, xlab)
	fmt.Fprintf(b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, svgH/2, svgH/2, html.EscapeString(ylab))
}

// legend writes one coloured key per series at the plot's top left.
func legend(b *strings.Builder, names, cols []string) {
	if len(names) < 2 {
		return
	}
	for i, n := range names {
		y := padT + 8 + 15*i
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`,
			padL+10, y-9, cols[i], padL+24, y, html.EscapeString(n))
	}
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

func ticks(lo, hi, step float64) []float64 {
	var out []float64
	for v := lo; v <= hi+1e-9; v += step {
		out = append(out, math.Round(v*1000)/1000)
	}
	return out
}

// errBar is a vertical 95% interval with caps, in the series' colour.
func errBar(b *strings.Builder, x, yLo, yHi float64, colour string) {
	fmt.Fprintf(b, `<g class="err" stroke="%s"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`,
		colour, x, yLo, x, yHi, x-3, yLo, x+3, yLo, x-3, yHi, x+3, yHi)
}

// relSeries is one forecaster's reliability bins.
type relSeries struct {
	name, colour string
	bins         []ReliabilityBin
}

// reliabilityPlot draws each series' non-empty bins at (mean forecast,
// observed rate) with the rate's Wilson interval; counts writes each bin's
// count above its interval (one series: the labels of several would
// overlap, so their counts go in a table).
func reliabilityPlot(b *strings.Builder, ss []relSeries, counts bool) {
	tk := ticks(0, 1, 0.2)
	axes(b, 0, 1, 0, 1, "forecast p(home)", "observed home win rate", tk, tk, trimFloat)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`,
		plotX(0, 0, 1), plotY(0, 0, 1), plotX(1, 0, 1), plotY(1, 0, 1))
	maxN := 1
	for _, s := range ss {
		for _, x := range s.bins {
			maxN = max(maxN, x.N)
		}
	}
	var names, cols []string
	for _, s := range ss {
		names, cols = append(names, s.name), append(cols, s.colour)
		var pts []string
		for _, x := range s.bins {
			if x.N == 0 {
				continue
			}
			px, py := plotX(x.MeanP, 0, 1), plotY(x.Observed, 0, 1)
			top := plotY(x.ObservedHigh, 0, 1)
			errBar(b, px, plotY(x.ObservedLow, 0, 1), top, s.colour)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			r := 3 + 7*math.Sqrt(float64(x.N)/float64(maxN))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" fill-opacity="0.6"><title>%s %.1f–%.1f: %d forecasts, mean %.3f, observed %.3f [%.3f, %.3f]</title></circle>`,
				px, py, r, s.colour, html.EscapeString(s.name), x.Low, x.High, x.N, x.MeanP, x.Observed, x.ObservedLow, x.ObservedHigh)
			if counts {
				text(b, px, math.Max(top-4, padT+fontSize), fmt.Sprintf("n=%d", x.N))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s"/>`, strings.Join(pts, " "), s.colour)
		}
	}
	legend(b, names, cols)
	b.WriteString("</svg>\n")
}

// monthSeries is one forecaster's Brier per month, by month index.
type monthSeries struct {
	name, colour string
	byMonth      map[int]MonthBrier
}

// monthlyPlot draws each series' monthly Brier with its 95% interval over
// the months (the x axis: one step a month, a label every few).
func monthlyPlot(b *strings.Builder, months []time.Time, ss []monthSeries) {
	if len(months) == 0 {
		axes(b, 0, 1, 0, 0.5, "month", "Brier", nil, ticks(0, 0.5, 0.1), trimFloat)
		b.WriteString("</svg>\n")
		return
	}
	lo, hi := 0.0, float64(max(len(months)-1, 1))
	var xt []float64
	step := max(1, len(months)/8)
	for i := 0; i < len(months); i += step {
		xt = append(xt, float64(i))
	}
	axes(b, lo, hi, 0, 0.5, "month", "Brier", xt, ticks(0, 0.5, 0.1), func(v float64) string {
		i := int(v)
		if i < 0 || i >= len(months) {
			return ""
		}
		return months[i].Format("2006-01")
	})
	y25 := plotY(0.25, 0, 0.5)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c33" stroke-dasharray="5 3"/>`, padL, y25, svgW-padR, y25)
	var names, cols []string
	for k, s := range ss {
		names, cols = append(names, s.name), append(cols, s.colour)
		// several series: each a little aside, so their intervals show
		dx := (float64(k) - float64(len(ss)-1)/2) * 3
		var pts []string
		for i := range months {
			mb, ok := s.byMonth[i]
			if !ok {
				continue
			}
			x := plotX(float64(i), lo, hi) + dx
			errBar(b, x, plotY(math.Max(0, mb.Low), 0, 0.5), plotY(math.Min(0.5, mb.High), 0, 0.5), s.colour)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, plotY(mb.Brier, 0, 0.5)))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s %s: %.4f [%.4f, %.4f] (n=%d)</title></circle>`,
				x, plotY(mb.Brier, 0, 0.5), s.colour, html.EscapeString(s.name), months[i].Format("2006-01"), mb.Brier, mb.Low, mb.High, mb.N)
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s"/>`, strings.Join(pts, " "), s.colour)
		}
	}
	legend(b, names, cols)
	b.WriteString("</svg>\n")
}

func sharpness(b *strings.Builder, fs []Forecast) {
	const bins = 10 // over [0.5, 1]
	var n [bins]int
	for _, f := range fs {
		p := math.Max(f.PHome, 1-f.PHome)
		k := int((p - 0.5) * 2 * bins)
		if k >= bins {
			k = bins - 1
		}
		n[k]++
	}
	maxN := 1
	for _, c := range n {
		maxN = max(maxN, c)
	}
	top := float64(maxN) * 1.1
	step := math.Max(1, math.Pow(10, math.Floor(math.Log10(top))))
	axes(b, 0.5, 1, 0, top, "forecast probability of the favourite", "forecasts", ticks(0.5, 1, 0.1), ticks(0, top, step), trimFloat)
	for k := 0; k < bins; k++ {
		x0 := plotX(0.5+float64(k)/(2*bins), 0.5, 1)
		x1 := plotX(0.5+float64(k+1)/(2*bins), 0.5, 1)
		y := plotY(float64(n[k]), 0, top)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#3b6fb6" fill-opacity="0.7"><title>%d</title></rect>`,
			x0+1, y, x1-x0-2, plotY(0, 0, top)-y, n[k])
	}
	b.WriteString("</svg>\n")
}

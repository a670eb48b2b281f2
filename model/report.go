package model

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Report writes the model review: a static HTML page with the metrics, a
// reliability (calibration) plot, the Brier score over time with its 95%
// interval, and a sharpness histogram, all as inline SVG.
func Report(w io.Writer, m Metrics, fs []Forecast) error {
	var settled []Forecast
	for _, f := range fs {
		if f.Settled {
			settled = append(settled, f)
		}
	}
	sort.SliceStable(settled, func(i, j int) bool { return settled[i].ScheduledAt.Before(settled[j].ScheduledAt) })
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>eo_model review</title>
<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;color:#222}
table{border-collapse:collapse}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}
th{text-align:left}svg{background:#fafafa;border:1px solid #ddd;margin:0.5em 0}</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>eo_model review</h1>\n<p>Model <code>%s</code>, market <code>%s</code>, evaluated at %s.</p>\n",
		html.EscapeString(m.ModelVersion), html.EscapeString(m.Market), m.EvaluatedAt.UTC().Format(time.RFC3339))
	gate := "closed"
	if m.GatePassed {
		gate = "open"
	}
	b.WriteString("<table>\n")
	for _, r := range [][2]string{
		{"Settled matches", fmt.Sprint(m.SettledMatches)},
		{"Brier score", fmt.Sprintf("%.4f", m.Brier)},
		{"Brier 95% CI (normal approx.)", fmt.Sprintf("[%.4f, %.4f]", m.BrierCILow, m.BrierCIHigh)},
		{"Brier skill score (1 − Brier/0.25)", fmt.Sprintf("%.4f", m.BrierSkillScore)},
		{"Log loss", fmt.Sprintf("%.4f", m.LogLoss)},
		{"Accuracy", fmt.Sprintf("%.4f", m.Accuracy)},
		{"Gate (CI upper < 0.25 and settled ≥ " + fmt.Sprint(m.MinSettled) + ")", gate},
	} {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>\n", html.EscapeString(r[0]), html.EscapeString(r[1]))
	}
	b.WriteString("</table>\n")

	b.WriteString("<h2>Reliability</h2>\n<p>Forecast probability of the home (team A) win, in ten bins, against the observed home win rate; the dot area follows the bin's count. The diagonal is perfect calibration.</p>\n")
	reliability(&b, settled)
	b.WriteString("<h2>Brier score over time</h2>\n<p>Brier score per calendar month with its 95% interval (normal approximation); the dashed line is the no-skill 0.25.</p>\n")
	brierOverTime(&b, settled)
	b.WriteString("<h2>Sharpness</h2>\n<p>Histogram of the forecast probability of the favourite, max(p, 1 − p), over all forecasts.</p>\n")
	sharpness(&b, fs)
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const (
	svgW, svgH = 640, 360
	padL, padB = 50, 36
	padT, padR = 14, 14
)

func plotX(v, lo, hi float64) float64 {
	return padL + (v-lo)/(hi-lo)*float64(svgW-padL-padR)
}

func plotY(v, lo, hi float64) float64 {
	return float64(svgH-padB) - (v-lo)/(hi-lo)*float64(svgH-padB-padT)
}

func axes(b *strings.Builder, xlo, xhi, ylo, yhi float64, xlab, ylab string, xticks, yticks []float64, xfmt func(float64) string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-size="11">`, svgW, svgH, svgW, svgH)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, svgH-padB, svgW-padR, svgH-padB)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, padT, padL, svgH-padB)
	for _, t := range xticks {
		x := plotX(t, xlo, xhi)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, svgH-padB+14, html.EscapeString(xfmt(t)))
	}
	for _, t := range yticks {
		y := plotY(t, ylo, yhi)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`, padL, y, svgW-padR, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+4, trimFloat(t))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, (svgW+padL)/2, svgH-4, html.EscapeString(xlab))
	fmt.Fprintf(b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, svgH/2, svgH/2, html.EscapeString(ylab))
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

func reliability(b *strings.Builder, fs []Forecast) {
	const bins = 10
	var n [bins]int
	var sp, so [bins]float64
	for _, f := range fs {
		k := int(f.PHome * bins)
		if k >= bins {
			k = bins - 1
		}
		n[k]++
		sp[k] += f.PHome
		so[k] += float64(f.Outcome)
	}
	tk := ticks(0, 1, 0.2)
	axes(b, 0, 1, 0, 1, "forecast p(home)", "observed home win rate", tk, tk, trimFloat)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`,
		plotX(0, 0, 1), plotY(0, 0, 1), plotX(1, 0, 1), plotY(1, 0, 1))
	maxN := 1
	for _, c := range n {
		maxN = max(maxN, c)
	}
	var pts []string
	for k := 0; k < bins; k++ {
		if n[k] == 0 {
			continue
		}
		x, y := plotX(sp[k]/float64(n[k]), 0, 1), plotY(so[k]/float64(n[k]), 0, 1)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		r := 3 + 9*math.Sqrt(float64(n[k])/float64(maxN))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="#3b6fb6" fill-opacity="0.6"><title>%d forecasts</title></circle>`, x, y, r, n[k])
	}
	if len(pts) > 1 {
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#3b6fb6"/>`, strings.Join(pts, " "))
	}
	b.WriteString("</svg>\n")
}

func brierOverTime(b *strings.Builder, fs []Forecast) {
	type month struct {
		t          time.Time
		n          int
		sum, sumSq float64
	}
	var ms []month
	for _, f := range fs {
		t := time.Date(f.ScheduledAt.Year(), f.ScheduledAt.Month(), 1, 0, 0, 0, 0, time.UTC)
		if len(ms) == 0 || !ms[len(ms)-1].t.Equal(t) {
			ms = append(ms, month{t: t})
		}
		m := &ms[len(ms)-1]
		br := f.Brier()
		m.n++
		m.sum += br
		m.sumSq += br * br
	}
	if len(ms) == 0 {
		axes(b, 0, 1, 0, 0.5, "month", "Brier", nil, ticks(0, 0.5, 0.1), trimFloat)
		b.WriteString("</svg>\n")
		return
	}
	lo, hi := 0.0, float64(max(len(ms)-1, 1))
	var xt []float64
	step := max(1, len(ms)/8)
	for i := 0; i < len(ms); i += step {
		xt = append(xt, float64(i))
	}
	axes(b, lo, hi, 0, 0.5, "month", "Brier", xt, ticks(0, 0.5, 0.1), func(v float64) string {
		i := int(v)
		if i < 0 || i >= len(ms) {
			return ""
		}
		return ms[i].t.Format("2006-01")
	})
	y25 := plotY(0.25, 0, 0.5)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c33" stroke-dasharray="5 3"/>`, padL, y25, svgW-padR, y25)
	var pts []string
	for i, m := range ms {
		mean := m.sum / float64(m.n)
		half := 0.0
		if m.n > 1 {
			v := (m.sumSq - float64(m.n)*mean*mean) / float64(m.n-1)
			half = 1.96 * math.Sqrt(math.Max(v, 0)/float64(m.n))
		}
		x := plotX(float64(i), lo, hi)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#7a9cc6"/>`, x, plotY(math.Max(0, mean-half), 0, 0.5), x, plotY(math.Min(0.5, mean+half), 0, 0.5))
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, plotY(mean, 0, 0.5)))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#3b6fb6"><title>%s: %.4f (n=%d)</title></circle>`, x, plotY(mean, 0, 0.5), m.t.Format("2006-01"), mean, m.n)
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#3b6fb6"/>`, strings.Join(pts, " "))
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

package model

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"time"
)

// Report writes the model review: a static HTML page (inline SVG, no
// scripts) with the gate's metrics over every settled forecast, eo_model
// against the closing eo_market line and the tuned Elo on the same matches
// (c, from Review: Brier with 95% intervals, log loss, the paired
// differences, reliability with counts and Wilson intervals, Brier per
// month), then eo_model's own reliability, Brier over time and sharpness.
// c may be nil (no comparison).
func Report(w io.Writer, m Metrics, fs []Forecast, c *Comparison) error {
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
table{border-collapse:collapse;margin:0.5em 0}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}
th{text-align:left}svg{background:#fafafa;border:1px solid #ddd;margin:0.5em 0}</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>eo_model review</h1>\n<p>Model <code>%s</code>, market <code>%s</code>, evaluated at %s.</p>\n",
		html.EscapeString(m.ModelVersion), html.EscapeString(m.Market), m.EvaluatedAt.UTC().Format(time.RFC3339))
	metricsTable(&b, m)
	comparisonSection(&b, c)

	b.WriteString("<h2>eo_model on every settled forecast</h2>\n<h3>Reliability</h3>\n<p>Forecast probability of the home (team A) win, in ten bins, against the observed home win rate: each point is a bin's mean forecast and observed rate, labelled with its count, with the rate's 95% Wilson interval; the dot area follows the count. The diagonal is perfect calibration.</p>\n")
	var ps []float64
	var ys []int
	for _, f := range settled {
		ps, ys = append(ps, f.PHome), append(ys, f.Outcome)
	}
	reliabilityPlot(&b, []relSeries{{ForecasterModel, colours[0], Reliability(ps, ys)}}, true)
	b.WriteString("<h3>Brier score over time</h3>\n<p>Brier score per calendar month with its 95% interval (normal approximation); the dashed line is the no-skill 0.25.</p>\n")
	months, series := monthlySeries(settled)
	monthlyPlot(&b, months, series)
	b.WriteString("<h3>Sharpness</h3>\n<p>Histogram of the forecast probability of the favourite, max(p, 1 − p), over all forecasts.</p>\n")
	sharpness(&b, fs)
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// colours of the forecasters' series, in Forecasters order.
var colours = [3]string{"#3b6fb6", "#d9822b", "#4a9a5b"}

func metricsTable(b *strings.Builder, m Metrics) {
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
		fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td></tr>\n", html.EscapeString(r[0]), html.EscapeString(r[1]))
	}
	b.WriteString("</table>\n")
}

// comparisonSection writes eo_model against the market and Elo: the scores
// table, the reliability plot and table, the Brier per month.
func comparisonSection(b *strings.Builder, c *Comparison) {
	b.WriteString("<h2>Against the closing market line and Elo</h2>\n")
	if c == nil || c.Matches == 0 {
		from := ""
		if c != nil && !c.From.IsZero() {
			from = " scheduled from " + c.From.Format("2006-01-02")
		}
		fmt.Fprintf(b, "<p>No settled match%s has both an eo_model forecast and a closing eo_market line: nothing to compare.</p>\n", from)
		return
	}
	fmt.Fprintf(b, "<p>The same %d settled matches for every forecaster: those scheduled from %s with an eo_model forecast, a closing eo_market match-winner line and a result. Elo's K and H were tuned on the %d completed matches before %s, so none of these matches chose them. Intervals are 95%%: normal approximation for the Brier scores and for the paired differences (per-match squared error of eo_model minus the other's; negative: eo_model better).</p>\n",
		c.Matches, c.From.Format("2006-01-02"), c.EloTuned, c.From.Format("2006-01-02"))
	b.WriteString("<table>\n<tr><th>forecaster</th><th>N</th><th>Brier</th><th>Brier 95% CI</th><th>log loss</th><th>accuracy</th><th>eo_model − this (95% CI)</th><th>forecast</th></tr>\n")
	for _, s := range c.Scores {
		diff := "–"
		if s.HasDiff {
			diff = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", s.ModelDiff, s.ModelDiffLow, s.ModelDiffHigh)
		}
		m := s.Metrics
		fmt.Fprintf(b, "<tr><th>%s</th><td>%d</td><td>%.4f</td><td>[%.4f, %.4f]</td><td>%.4f</td><td>%.4f</td><td>%s</td><td style=\"text-align:left\">%s</td></tr>\n",
			html.EscapeString(s.Forecaster), m.SettledMatches, m.Brier, m.BrierCILow, m.BrierCIHigh, m.LogLoss, m.Accuracy,
			diff, html.EscapeString(s.Params))
	}
	b.WriteString("</table>\n<ul>\n")
	for _, s := range c.Scores {
		if s.HasDiff {
			fmt.Fprintf(b, "<li>%s</li>\n", html.EscapeString(verdict(s)))
		}
	}
	b.WriteString("</ul>\n")

	b.WriteString("<h3>Reliability on the compared matches</h3>\n<p>Each point is a bin's mean forecast and observed home win rate with the rate's 95% Wilson interval; the counts are in the table below.</p>\n")
	var rs []relSeries
	for k, name := range Forecasters {
		rs = append(rs, relSeries{name, colours[k], fullBins(c.Reliability, name)})
	}
	reliabilityPlot(b, rs, false)
	reliabilityTable(b, rs)

	b.WriteString("<h3>Brier score per month on the compared matches</h3>\n<p>Calendar months (UTC) of the scheduled time, each forecaster's Brier score with its 95% interval; the dashed line is the no-skill 0.25.</p>\n")
	months, series := comparisonMonths(c)
	monthlyPlot(b, months, series)
	monthlyTable(b, months, series)
}

// verdict says in words what a paired difference shows.
func verdict(s ForecasterScore) string {
	d := fmt.Sprintf("eo_model − %s: %+.4f, 95%% CI [%+.4f, %+.4f]: ", s.Forecaster, s.ModelDiff, s.ModelDiffLow, s.ModelDiffHigh)
	switch {
	case s.ModelDiffHigh < 0:
		return d + "eo_model is better than " + s.Forecaster + " (the interval excludes 0)."
	case s.ModelDiffLow > 0:
		return d + s.Forecaster + " is better than eo_model (the interval excludes 0)."
	}
	return d + "no difference shown (the interval includes 0)."
}

// fullBins are the ten bins of forecaster name (the empty ones, left out
// of a Comparison, with N = 0).
func fullBins(bins []ReliabilityBin, name string) []ReliabilityBin {
	out := Reliability(nil, nil)
	for _, b := range bins {
		if b.Forecaster == name && b.Bin >= 0 && b.Bin < len(out) {
			out[b.Bin] = b
		}
	}
	return out
}

func reliabilityTable(b *strings.Builder, rs []relSeries) {
	b.WriteString("<table>\n<tr><th>forecast</th>")
	for _, s := range rs {
		fmt.Fprintf(b, "<th>%s: n, mean forecast, observed [95%% Wilson]</th>", html.EscapeString(s.name))
	}
	b.WriteString("</tr>\n")
	for k := 0; k < ReliabilityBins; k++ {
		fmt.Fprintf(b, "<tr><th>%.1f–%.1f</th>", float64(k)/ReliabilityBins, float64(k+1)/ReliabilityBins)
		for _, s := range rs {
			x := s.bins[k]
			if x.N == 0 {
				b.WriteString("<td>–</td>")
				continue
			}
			fmt.Fprintf(b, "<td>%d, %.3f, %.3f [%.3f, %.3f]</td>", x.N, x.MeanP, x.Observed, x.ObservedLow, x.ObservedHigh)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// comparisonMonths are the months of c and one series of Brier scores per
// forecaster over them (a month a forecaster has no match in is skipped).
func comparisonMonths(c *Comparison) ([]time.Time, []monthSeries) {
	seen := map[time.Time]bool{}
	var months []time.Time
	for _, mb := range c.Monthly {
		if !seen[mb.Month] {
			seen[mb.Month] = true
			months = append(months, mb.Month)
		}
	}
	sort.Slice(months, func(i, j int) bool { return months[i].Before(months[j]) })
	at := map[time.Time]int{}
	for i, m := range months {
		at[m] = i
	}
	var out []monthSeries
	for k, name := range Forecasters {
		s := monthSeries{name: name, colour: colours[k], byMonth: map[int]MonthBrier{}}
		for _, mb := range c.Monthly {
			if mb.Forecaster == name {
				s.byMonth[at[mb.Month]] = mb
			}
		}
		out = append(out, s)
	}
	return months, out
}

// monthlySeries is the one series of eo_model's Brier per month over fs
// (sorted by time).
func monthlySeries(fs []Forecast) ([]time.Time, []monthSeries) {
	var months []time.Time
	byMonth := map[time.Time][]Forecast{}
	for _, f := range fs {
		t := f.ScheduledAt.UTC()
		m := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		if _, ok := byMonth[m]; !ok {
			months = append(months, m)
		}
		byMonth[m] = append(byMonth[m], f)
	}
	s := monthSeries{name: ForecasterModel, colour: colours[0], byMonth: map[int]MonthBrier{}}
	for i, m := range months {
		e := Evaluate(byMonth[m], 0, time.Time{})
		s.byMonth[i] = MonthBrier{Forecaster: ForecasterModel, Month: m, N: e.SettledMatches, Brier: e.Brier, Low: e.BrierCILow, High: e.BrierCIHigh}
	}
	return months, []monthSeries{s}
}

func monthlyTable(b *strings.Builder, months []time.Time, ss []monthSeries) {
	b.WriteString("<table>\n<tr><th>month</th>")
	for _, s := range ss {
		fmt.Fprintf(b, "<th>%s: Brier [95%% CI]</th>", html.EscapeString(s.name))
	}
	b.WriteString("<th>n</th></tr>\n")
	for i, m := range months {
		fmt.Fprintf(b, "<tr><th>%s</th>", m.Format("2006-01"))
		n := 0
		for _, s := range ss {
			mb, ok := s.byMonth[i]
			if !ok {
				b.WriteString("<td>–</td>")
				continue
			}
			n = max(n, mb.N)
			fmt.Fprintf(b, "<td>%.4f [%.4f, %.4f]</td>", mb.Brier, mb.Low, mb.High)
		}
		fmt.Fprintf(b, "<td>%d</td></tr>\n", n)
	}
	b.WriteString("</table>\n")
}

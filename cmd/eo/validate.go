package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/eodata/eo/importer"
	"github.com/eodata/eo/model"
	"github.com/eodata/eo/validate"
)

// cmdValidate: eo validate --source S --path P [--from DATE] [--out FILE]
// replays the dataset's completed matches walk-forward and compares
// eo_model with a coin flip, a tuned Elo and (where the data has them) HLTV
// ranks; see validate/.
func cmdValidate(_ context.Context, cfg Config, args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	source := fs.String("source", "", "dataset: "+strings.Join(importer.Sources, ", "))
	path := fs.String("path", "", "the dataset's file or folder")
	from := fs.String("from", "", "start of the evaluation period (YYYY-MM-DD); earlier matches tune Elo and the rank fit (default: the month after the first 20% of matches)")
	out := fs.String("out", "", "also write the markdown report to this file")
	period := fs.Duration("model-period", 0, "experiment: eo_model rating period instead of the pipeline's (e.g. 24h)")
	initRD := fs.Float64("model-rd", 0, "experiment: eo_model initial rating deviation instead of the pipeline's")
	stack := stackFlags(fs)
	usage := fmt.Sprintf("usage: eo validate --source %s --path FILE_OR_DIR [--from YYYY-MM-DD] [--out FILE]", strings.Join(importer.Sources, "|"))
	if err := parseFlags(fs, args, usage, "source", "path"); err != nil {
		return err
	}
	var o validate.Options
	if *from != "" {
		t, err := time.Parse("2006-01-02", *from)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		o.From = t
	}
	exp := stack.changed(fs)
	if *period > 0 || *initRD > 0 || exp != "" {
		cfg := model.DefaultForecastConfig()
		if *period > 0 {
			cfg.Ratings.Period = *period
		}
		if *initRD > 0 {
			cfg.Ratings.Initial.RD = *initRD
		}
		if err := stack.apply(&cfg.Stack); err != nil {
			return err
		}
		o.Model = &cfg
	}
	ds, err := importer.Read(*source, *path)
	if err != nil {
		return err
	}
	rep, err := validate.RunDataset(ds, o)
	if err != nil {
		return err
	}
	cmd := "eo validate --source " + *source + " --path " + *path
	if *from != "" {
		cmd += " --from " + *from
	}
	if *period > 0 {
		cmd += " --model-period " + period.String()
	}
	if *initRD > 0 {
		cmd += fmt.Sprintf(" --model-rd %g", *initRD)
	}
	cmd += exp
	md := rep.Markdown(*source, cmd)
	fmt.Print(md)
	if *out != "" {
		return os.WriteFile(*out, []byte(md), 0o644)
	}
	return nil
}

// stackOpts are the experiment flags of eo_model 2.0's configuration
// (model.StackConfig); unset flags keep model.DefaultStackConfig().
type stackOpts struct {
	features, mapKGrid                                     *string
	mapK, mapScale, roundW, perfK, roster, ridge, mapDecay *float64
	minTrain, refit, window                                *int
}

func stackFlags(fs *flag.FlagSet) *stackOpts {
	d := model.DefaultStackConfig()
	return &stackOpts{
		features: fs.String("stack", strings.Join(d.Features, ","), "experiment: eo_model 2.0's stacker features (comma-separated; \"none\": 1.1.0's forecast)"),
		mapK:     fs.Float64("map-k", d.MapK, "experiment: map-level rating step (used when --map-k-grid is none)"),
		mapKGrid: fs.String("map-k-grid", joinFloats(d.MapKGrid), "experiment: map-level steps the stacker picks from at each refit (comma-separated; \"none\": --map-k alone)"),
		mapDecay: fs.Float64("map-decay", d.MapDecay, "experiment: map-level step decay (maps; 0: constant step)"),
		mapScale: fs.Float64("map-scale", d.MapScale, "experiment: map-level rating difference to map win probability scale"),
		roundW:   fs.Float64("round-weight", d.RoundWeight, "experiment: weight of the round share in a map's score"),
		perfK:    fs.Float64("perf-k", d.PerfK, "experiment: kill-share rating step"),
		roster:   fs.Float64("roster-shrink", d.RosterShrink, "experiment: rating shrink per changed player (fraction of five)"),
		ridge:    fs.Float64("ridge", d.Ridge, "experiment: stacker ridge"),
		minTrain: fs.Int("min-train", d.MinTrain, "experiment: settled forecasts before the stacker is used"),
		refit:    fs.Int("refit-months", d.RefitMonths, "experiment: stacker refit cadence in months"),
		window:   fs.Int("window-months", d.WindowMonths, "experiment: months of results the stacker is fitted on (0: all)"),
	}
}

// changed is the command-line suffix of the experiment flags that were set
// ("" when none was).
func (s *stackOpts) changed(fs *flag.FlagSet) string {
	var out string
	names := map[string]bool{"stack": true, "map-k": true, "map-scale": true, "round-weight": true, "perf-k": true,
		"roster-shrink": true, "ridge": true, "min-train": true, "refit-months": true, "window-months": true, "map-decay": true,
		"map-k-grid": true}
	fs.Visit(func(f *flag.Flag) {
		if names[f.Name] {
			out += " --" + f.Name + " " + f.Value.String()
		}
	})
	return out
}

func (s *stackOpts) apply(c *model.StackConfig) error {
	c.Features = nil
	if *s.features != "none" && *s.features != "" {
		c.Features = strings.Split(*s.features, ",")
	}
	c.MapK, c.MapScale, c.RoundWeight, c.PerfK, c.MapDecay = *s.mapK, *s.mapScale, *s.roundW, *s.perfK, *s.mapDecay
	c.MapKGrid = nil
	if *s.mapKGrid != "none" && *s.mapKGrid != "" {
		for _, f := range strings.Split(*s.mapKGrid, ",") {
			k, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return fmt.Errorf("--map-k-grid: %w", err)
			}
			c.MapKGrid = append(c.MapKGrid, k)
		}
	}
	c.RosterShrink, c.Ridge, c.MinTrain, c.RefitMonths, c.WindowMonths = *s.roster, *s.ridge, *s.minTrain, *s.refit, *s.window
	return nil
}

// joinFloats is fs as a comma-separated list.
func joinFloats(fs []float64) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.Join(out, ",")
}

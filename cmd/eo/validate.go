package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	usage := fmt.Errorf("usage: eo validate --source %s --path FILE_OR_DIR [--from YYYY-MM-DD] [--out FILE]", strings.Join(importer.Sources, "|"))
	if err := parseRequired(fs, args, usage, "source", "path"); err != nil {
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
	if *period > 0 || *initRD > 0 {
		cfg := model.DefaultForecastConfig()
		if *period > 0 {
			cfg.Ratings.Period = *period
		}
		if *initRD > 0 {
			cfg.Ratings.Initial.RD = *initRD
		}
		o.Model = &cfg
	}
	ds, err := importer.Read(*source, *path)
	if err != nil {
		return err
	}
	rep, err := validate.Run(ds.Games, o)
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
	md := rep.Markdown(*source, cmd)
	fmt.Print(md)
	if *out != "" {
		return os.WriteFile(*out, []byte(md), 0o644)
	}
	return nil
}

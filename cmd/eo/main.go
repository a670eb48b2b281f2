// Command eo is the service's one binary: generate a synthetic world, run the
// pipeline and publish snapshots, schedule jobs, and serve the edge.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `eo: Counter-Strike 2 match data and odds service

Usage:
  eo generate [flags]        land a deterministic synthetic world as one raw batch
  eo pipeline run [flags]    run the pipeline on every landed batch and publish a snapshot
  eo snapshots [flags]       list published snapshots
  eo jobs [flags]            run pipeline + publish on a cron schedule
  eo serve [flags]           serve the newest snapshot over REST
  eo keys ...                accounts and API keys (eo keys for help)
  eo usage export            export usage events to the store as Parquet
  eo up [flags]              the embedded default end to end: generate if empty, pipeline, serve
  eo model report --out FILE write the eo_model review report (HTML) of the latest pipeline run
  eo import --source S --path P   land a public HLTV dataset (csgo2015, cs2-2024, cs2-2026) as one raw batch
  eo validate --source S --path P walk-forward evaluation of eo_model vs baselines on real matches

Run "eo <command> -h" for a command's flags. Flags fall back to EO_* environment
variables (EO_STORE, EO_WORK, EO_ADDR); README.md lists every EO_* setting.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "eo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(usage)
		return nil
	}
	switch args[0] {
	case "generate":
		return cmdGenerate(ctx, cfg, args[1:])
	case "pipeline":
		if len(args) < 2 || args[1] != "run" {
			return fmt.Errorf("usage: eo pipeline run [flags]")
		}
		return cmdPipelineRun(ctx, cfg, args[2:])
	case "snapshots":
		return cmdSnapshots(ctx, cfg, args[1:])
	case "jobs":
		return cmdJobs(ctx, cfg, args[1:])
	case "serve":
		return cmdServe(ctx, cfg, args[1:])
	case "keys":
		return cmdKeys(cfg, args[1:])
	case "usage":
		return cmdUsage(ctx, cfg, args[1:])
	case "up":
		return cmdUp(ctx, cfg, args[1:])
	case "bench-bare": // cmd/eo/benchbare.go: the bare Fiber baseline of scripts/bench-edge.sh
		return cmdBenchBare(ctx, cfg, args[1:])
	case "bench-flood": // cmd/eo/benchflood.go: the hostile clients of scripts/flood.sh
		return cmdBenchFlood(ctx, cfg, args[1:])
	case "model": // cmd/eo/model.go
		return cmdModel(ctx, cfg, args[1:])
	case "import": // cmd/eo/import.go
		return cmdImport(ctx, cfg, args[1:])
	case "validate": // cmd/eo/validate.go
		return cmdValidate(ctx, cfg, args[1:])
	default:
		return fmt.Errorf("unknown command %q\n\n%s", args[0], usage)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/eodata/eo/access"
)

// cmdUsage: eo usage export — writes the usage events recorded since the
// last export to the store as Parquet
// (usage/events/<day>/<source>/<after>_<last>.parquet), for billing, then
// prunes them from the counters backend. With the embedded backend it needs
// the counters database, which a running `eo serve` holds (it exports by
// itself every EO_USAGE_EXPORT_INTERVAL); with Redis it may run beside the
// edges (one export of a source runs at a time).
func cmdUsage(ctx context.Context, cfg Config, args []string) error {
	const usageUsage = "usage: eo usage export [--store S --work W]  (EO_REDIS_URL selects the Redis backend)"
	args, done, err := subcommand(args, "export", usageUsage)
	if done || err != nil {
		return err
	}
	c := common{cfg: cfg}
	fs := c.flags("usage export")
	log, st, err := c.parseOpen(ctx, fs, args)
	if err != nil {
		return err
	}
	ctr, err := c.counters(ctx, log)
	if err != nil {
		return err
	}
	defer ctr.Close()
	n, err := access.ExportUsage(ctx, ctr, st, 0)
	if errors.Is(err, access.ErrExportBusy) {
		fmt.Println("another export of this usage source is running (an edge's periodic export); nothing done")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("exported %d usage events to %s%s\n", n, st.String(), "/"+access.UsagePrefix)
	return nil
}

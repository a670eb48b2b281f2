package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/eodata/eo/access"
)

// cmdUsage: eo usage export — writes the usage events recorded since the
// last export to the store as Parquet (usage/events/<day>/...), for billing.
func cmdUsage(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "export" {
		return fmt.Errorf("usage: eo usage export [--store S --work W]  (EO_REDIS_URL selects the Redis backend)")
	}
	fs := flag.NewFlagSet("usage export", flag.ContinueOnError)
	var c common
	c.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	ctr, err := c.counters(ctx)
	if err != nil {
		return err
	}
	defer ctr.Close()
	n, err := access.ExportUsage(ctx, ctr, st, 0)
	if err != nil {
		return err
	}
	fmt.Printf("exported %d usage events to %s%s\n", n, st.String(), "/"+access.UsagePrefix)
	return nil
}

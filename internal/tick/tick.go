// Package tick runs a job on an interval until its context ends, going on
// after a failure: the edge's snapshot poll, the live feed's
// resubscription, the key checks of open WebSocket connections, the usage
// export, and package reload's Watch.
package tick

import (
	"context"
	"time"
)

// Every calls fn every interval until ctx ends; no call starts after it
// ended. An error of fn is passed to failed (log it, count it) and the loop
// goes on; an error after ctx ended is the shutdown's and is dropped.
func Every(ctx context.Context, every time.Duration, fn func(context.Context) error, failed func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return // both were ready: the shutdown wins, no run starts after it
			}
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}
	}
}

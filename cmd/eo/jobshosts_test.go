package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/miniotest"
	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
)

// TestTwoJobsHostsNeverMoveThePointerBack runs two `eo jobs` processes,
// each with its own work folder, on one MinIO store while raw batches land
// every 0.25 s: two jobs hosts by mistake, or one host's runner beside an
// `eo pipeline run` elsewhere. Each new pointer must name a snapshot built
// from every batch the one it replaced was built from, and created no
// earlier unless built from more: the pointer moves by compare-and-swap (a
// conditional PUT), and a run that lost the race to a snapshot with more
// batches, or with the same ones, does not publish.
func TestTwoJobsHostsNeverMoveThePointerBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO and two eo jobs")
	}
	srv := miniotest.Start(t)
	ctx := context.Background()
	opts := store.S3Options{Endpoint: srv.Endpoint, AccessKey: miniotest.AccessKey, SecretKey: miniotest.SecretKey}
	b := opts
	b.Bucket, b.CreateBucket = "eo-hosts", true
	if _, err := store.NewS3(ctx, b); err != nil {
		t.Fatal(err)
	}
	const location = "s3://eo-hosts/world"
	st, err := store.Open(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join("..", "..", "pipelines", "testdata", "fixture")
	at := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	worldtest.LandDir(t, st, fixture, at, nil)
	env := []string{"EO_S3_ENDPOINT=" + srv.Endpoint, "EO_S3_ACCESS_KEY=" + miniotest.AccessKey,
		"EO_S3_SECRET_KEY=" + miniotest.SecretKey}
	dir := t.TempDir()
	var hosts []*edgeProc
	for _, name := range []string{"a", "b"} {
		hosts = append(hosts, startEO(t, 0, env, "jobs", "--store", location, "--work", filepath.Join(dir, name),
			"--schedule", "@every 1s", "--land-every", "0"))
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			worldtest.LandDir(t, st, fixture, at.Add(time.Duration(i)*time.Minute), nil)
		}
	})
	var seen []publish.Manifest
	// 25 s of races, longer (up to 90 s) on a machine so busy that fewer
	// than three snapshots were served by then: the property is about the
	// order of the moves, not their rate.
	start := time.Now()
	for !t.Failed() && (time.Since(start) < 25*time.Second || len(seen) < 3 && time.Since(start) < 90*time.Second) {
		time.Sleep(50 * time.Millisecond)
		_, m, err := publish.LoadLatest(ctx, st)
		if err != nil || (len(seen) > 0 && seen[len(seen)-1].SnapshotID == m.SnapshotID) {
			continue
		}
		if len(seen) > 0 {
			prev := seen[len(seen)-1]
			have := strings.Split(m.Extra["raw_batches"], ",")
			for id := range strings.SplitSeq(prev.Extra["raw_batches"], ",") {
				if !slices.Contains(have, id) {
					t.Errorf("the pointer moved from %s to %s, which was not built from batch %s: the served data went back",
						prev.SnapshotID, m.SnapshotID, id)
				}
			}
			// An older snapshot replaces a newer one only when it was built
			// from more (it listed later and finished first).
			if m.CreatedAt.Before(prev.CreatedAt) && m.Extra["raw_batches"] == prev.Extra["raw_batches"] {
				t.Errorf("the pointer moved from %s (created %s) to %s, created earlier (%s) from the same batches",
					prev.SnapshotID, prev.CreatedAt, m.SnapshotID, m.CreatedAt)
			}
		}
		seen = append(seen, m)
	}
	close(stop)
	wg.Wait()
	for i, h := range hosts {
		if !h.alive() {
			t.Errorf("eo jobs %c exited:\n%s", 'a'+i, h.out)
		}
	}
	published := 0
	for _, h := range hosts {
		published += strings.Count(h.out.String(), "snapshot published")
	}
	t.Logf("%d pointer moves seen; runs published: %d; runs superseded: %d", len(seen), published,
		strings.Count(hosts[0].out.String()+hosts[1].out.String(), "run superseded"))
	if len(seen) < 3 {
		t.Fatalf("only %d snapshots served in %s:\na:\n%s\nb:\n%s", len(seen), time.Since(start).Round(time.Second), hosts[0].out, hosts[1].out)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/importer"
)

// cmdImport: eo import --source csgo2015|cs2-2024|cs2-2026 --path FILE_OR_DIR
// reads a public HLTV-scraped dataset through its adapter (importer/) and
// lands it as one raw batch. Run "eo pipeline run" afterwards.
func cmdImport(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg}
	fs := c.flags("import")
	source := fs.String("source", "", "dataset: "+strings.Join(importer.Sources, ", "))
	path := fs.String("path", "", "the dataset's file or folder (see importer/ and MODEL.md, Real data)")
	dry := fs.Bool("dry-run", false, "read and report, land nothing")
	usage := fmt.Sprintf("usage: eo import --source %s --path FILE_OR_DIR [--store S --work W]", strings.Join(importer.Sources, "|"))
	if err := parseFlags(fs, args, usage, "source", "path"); err != nil {
		return err
	}
	ds, err := importer.Read(*source, *path)
	if err != nil {
		return err
	}
	fmt.Printf("read %s: %d matches, %d teams, %d tournaments, %d map results, %d vetoes, %d players, %d stat lines\n",
		*source, len(ds.Matches), len(ds.Teams), len(ds.Tournaments), len(ds.Maps), len(ds.Vetoes), len(ds.Players), len(ds.Stats))
	printCounts("not landed", ds.Skipped)
	printCounts("notes", ds.Notes)
	if *dry {
		return nil
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	now := time.Now().UTC()
	m, err := importer.Land(ctx, st, ds, c.work, now)
	if err != nil {
		return err
	}
	fmt.Printf("landed batch %s in %s (source %s); run \"eo pipeline run\" to build a snapshot\n", m.BatchID, st.String(), m.Source)
	return nil
}

func printCounts(title string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("%s:\n", title)
	for _, k := range keys {
		fmt.Printf("  %7d  %s\n", m[k], k)
	}
}

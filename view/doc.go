// Package view is the data the service serves: a published snapshot loaded
// into memory (Snapshot: rows, indexes per sort order, pre-rendered JSON)
// and the live changes made since (View: the snapshot plus an immutable
// delta, rebuilt per batch of changes and swapped whole). It answers every
// query of the API with bytes rendered at load (plain on the list paths,
// zstd-packed for per-match sub-resources) or, for odds history, from
// compact rows per request, and knows nothing of HTTP: the edge parses
// requests, asks a View, and writes what it returns.
//
// Nothing here runs SQL or reads the object store; Load reads the Parquet
// files of a fetched snapshot folder.
package view

// Package tables is the format of a published snapshot's tables on disk,
// shared by the pipeline that writes them and the view that reads them: the
// ids, the row types of the matches' sub-resources and their JSON, the
// Parquet reader (rows into Go structs, a row group at a time), the patch
// that writes a table's new file from the previous one and the changed
// segments, and the match parts (each match's sub-resources rendered once
// and zstd-packed, in match_parts.parquet). It imports no other package of
// the module.
package tables

package store

import (
	"path/filepath"
	"strings"
)

// LocalPath returns the file system path of key (or of a key prefix ending in
// '/'), so that a reader on the same machine (the pipeline's DuckDB) can read
// raw files in place instead of copying them.
func (l *Local) LocalPath(key string) string {
	return filepath.Join(l.dir, filepath.FromSlash(strings.TrimSuffix(key, "/")))
}

// Package sql embeds the pipeline's DuckDB SQL: the staging template that
// types and validates raw lines; the numbered normalise, derive and assemble
// steps (files run in name order within a folder; each is idempotent, CREATE
// OR REPLACE, so a step can be re-run after a failure); and the named
// statements the Go steps run (model/, registries/, changes/), read with
// MustFile.
package sql

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed stage/*.tmpl normalise/*.sql derive/*.sql assemble/*.sql model/*.sql registries/*.sql changes/*.sql
var files embed.FS

// Step is one named SQL file.
type Step struct {
	Name string // e.g. "normalise/02_tables.sql"
	SQL  string
}

// Steps returns the .sql files of a folder in name order.
func Steps(folder string) ([]Step, error) {
	ents, err := fs.ReadDir(files, folder)
	if err != nil {
		return nil, fmt.Errorf("sql: read %s: %w", folder, err)
	}
	var out []Step
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := files.ReadFile(folder + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Step{Name: folder + "/" + e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// MustFile returns a named statement file, e.g. "model/rankings.sql". It
// is called when a package initialises, so a missing file stops every
// binary and test of that package at once, naming the file.
func MustFile(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("sql: %s: %v", name, err))
	}
	return string(b)
}

// Template returns a text template file's source, e.g. "stage/stage.sql.tmpl".
func Template(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("sql: read %s: %w", name, err)
	}
	return string(b), nil
}

// Digest is a SHA-256 over every embedded file's name and text: what a
// persisted pipeline state records, so that a build whose SQL differs
// (any step, any statement) never continues a state another build made.
func Digest() string {
	h := sha256.New()
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

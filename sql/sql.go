// Package sql embeds the pipeline's DuckDB SQL, one file a step or a
// statement, named by step (sql/<step>/...). Every file is a Go text
// template (most have no action and read as plain SQL): the pipeline
// renders it with the step's values (a table name, an entity's fields) and
// runs its statements in order. Folders whose files run in name order
// (normalise, derive, assemble, aggregate) are read with Steps.
package sql

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"text/template"
)

//go:embed */*.sql */*.tmpl
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

// Render renders the file name (e.g. "merge/replace.sql") as a text
// template with data, and funcs beside the standard ones (join: strings.Join;
// quote: a SQL string literal).
func Render(name string, data any, funcs template.FuncMap) (string, error) {
	return render(name, "", data, funcs)
}

// Fragment renders the template define of the file name (a piece of a
// statement, such as a predicate) with data.
func Fragment(name, define string, data any) (string, error) {
	q, err := render(name, define, data, nil)
	return strings.TrimSpace(q), err
}

func render(name, define string, data any, funcs template.FuncMap) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("sql: read %s: %w", name, err)
	}
	t := template.New(name).Option("missingkey=error").Funcs(template.FuncMap{
		"join":  strings.Join,
		"quote": Quote,
	})
	if funcs != nil {
		t = t.Funcs(funcs)
	}
	if t, err = t.Parse(string(b)); err != nil {
		return "", fmt.Errorf("sql: %s: %w", name, err)
	}
	var buf bytes.Buffer
	if define == "" {
		err = t.Execute(&buf, data)
	} else {
		err = t.ExecuteTemplate(&buf, define, data)
	}
	if err != nil {
		return "", fmt.Errorf("sql: %s: %w", name, err)
	}
	return buf.String(), nil
}

// Quote is s as a SQL string literal.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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

// Package deps holds no code: its test keeps the house rules that need a
// package's transitive imports or the whole module, as tailscale's deptest
// does: the layering (the view reaches no heavy dependency, the edge never
// the pipeline, the push side and the snapshot keeper never each other,
// raw, access, live and the importer the object store but never the
// snapshots) and one package doc comment per package. The rules on direct
// imports, the environment and function length are golangci-lint's
// (.golangci.yml).
package deps

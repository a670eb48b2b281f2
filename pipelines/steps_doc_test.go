package pipelines

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// docs/pipeline.md's table of the steps names the steps of a run, in the
// order steps runs them, and no other.
func TestPipelineDocListsTheSteps(t *testing.T) {
	b, err := os.ReadFile("../docs/pipeline.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z ]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	var declared []string
	for _, s := range steps {
		declared = append(declared, s.name)
	}
	if !slices.Equal(documented, declared) {
		t.Errorf("docs/pipeline.md lists the steps %q; pipelines/steps.go runs %q", documented, declared)
	}
}

package edge

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// openapiTypeScript is the client generator the contract is checked with
// (npm's openapi-typescript; .ci/run installs this version).
const openapiTypeScript = "openapi-typescript"

// A client generated from the contract with a standard generator is typed
// throughout: the generator prints no warning, every JSON response is a
// named schema, and no envelope's data is left untyped (a list envelope
// declared through allOf once lost every row type).
func TestGeneratedClientIsTyped(t *testing.T) {
	bin, err := exec.LookPath(openapiTypeScript)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but openapi-typescript is not installed (.ci/run installs it with npm)")
		}
		t.Skip("openapi-typescript is not installed: npm install -g openapi-typescript@7.13.0")
	}
	out := filepath.Join(t.TempDir(), "api.d.ts")
	cmd := exec.Command(bin, "edge/openapi.yaml", "-o", out)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openapi-typescript failed: %v\n%s", err, stderr.Bytes())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("openapi-typescript warned:\n%s", s)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ts := string(b)
	responses := regexp.MustCompile(`"application/json": (.+);`).FindAllStringSubmatch(ts, -1)
	if len(responses) < 30 {
		t.Fatalf("only %d JSON responses in the generated client; the check is broken", len(responses))
	}
	for _, r := range responses {
		if !strings.HasPrefix(r[1], `components["schemas"]["`) {
			t.Errorf("a JSON response is not a named schema: %s", r[0])
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+)\??: (unknown|unknown\[\]|Record<string, never>);$`).FindAllStringSubmatch(ts, -1) {
		t.Errorf("generated field %s is untyped (%s)", m[1], m[2])
	}
	envelopes := regexp.MustCompile(`(?m)^        (\w+(List|Single)): \{\n\s+data: components\["schemas"\]\["\w+"\](\[\])?;`).FindAllStringSubmatch(ts, -1)
	if len(envelopes) < 25 {
		t.Errorf("only %d response envelopes carry a typed data field", len(envelopes))
	}
}

package raw

import (
	"testing"
	"time"
)

func TestValidBatchID(t *testing.T) {
	if id := NewBatchID(time.Now()); !ValidBatchID(id) {
		t.Fatalf("NewBatchID wrote %q, which ValidBatchID refuses", id)
	}
	for _, id := range []string{"", "../../outside", "20261123T085500.123Z-3f9a1c/..", "20261123T085500.123Z-3F9A1C",
		"20261123T085500Z-3f9a1c", "x20261123T085500.123Z-3f9a1c", "20261123T085500.123Z-3f9a1c\n"} {
		if ValidBatchID(id) {
			t.Errorf("ValidBatchID(%q) = true", id)
		}
	}
}

func TestParseManifestNamesTheProblem(t *testing.T) {
	const id = "20250311T000000.000Z-abcdef"
	for body, want := range map[string]string{
		`{"batch_id":"` + id + `","contract_version":1,"landed_at":"2025-03-11T00:00:00Z","files":{}}`:            "",
		`{"batch_id":"` + id + `","contract_version":"1","landed_at":"2025-03-11T00:00:00Z","files":{}}`:          "malformed _batch.json",
		`{"batch_id":"../` + id + `","contract_version":1,"landed_at":"2025-03-11T00:00:00Z","files":{}}`:         "invalid batch_id",
		`{"batch_id":"20250311T000000.000Z-000000","contract_version":1,"landed_at":"2025-03-11T00:00:00Z"}`:      "batch_id does not match its folder",
		`{"batch_id":"` + id + `","landed_at":"2025-03-11T00:00:00Z","files":{}}`:                                 "missing contract_version",
		`{"batch_id":"` + id + `","contract_version":1,"landed_at":"yesterday","files":{}}`:                       "malformed _batch.json",
		`{"batch_id":"` + id + `","contract_version":1,"landed_at":"2025-03-11T00:00:00Z","files":{"teams":"x"}}`: "malformed _batch.json",
	} {
		if _, got, _ := ParseManifest(id, []byte(body)); got != want {
			t.Errorf("%s: reason %q, want %q", body, got, want)
		}
	}
}

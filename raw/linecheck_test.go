package raw

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// jsonCheckCases are lines the raw area may hold: generated records and
// hostile ones (every way a JSON text can be malformed or unusual).
func jsonCheckCases() [][]byte {
	cases := []string{
		`{}`, `{"a":1}`, `{"a":1,}`, `{"a":01}`, `{"a":-0}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`,
		`{"a":1E400}`, `{"a":-1e-400}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":-Infinity}`, `{"a":nul}`, `{"a":tru}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":"\/"}`,
		"{\"a\":\"\x01\"}", "{\"a\":\"\t\"}", "{\"a\":\"\x7f\"}", "{\"a\":\"\u2028\"}", `{'a':1}`, `{a:1}`,
		`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1}}`, `{"a":[1,2,]}`, `{"a":[,]}`, `{"a":{"b":}}`, `{"a" 1}`,
		`{"a":1 "b":2}`, `{"a":1,"a":2}`, "\ufeff{\"a\":1}", `{"a":1}/**/`, `{"a":"` + strings.Repeat(`\\`, 9) + `"}`,
		`{"a":"b\"}`, `{"":""}`, `{"a":[[[[[[[[[[]]]]]]]]]]}`, `{"a":true,"b":false,"c":null}`, `{"a":0.0e-0}`,
		strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
		strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500),
		`{"a":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`,
	}
	var out [][]byte
	for _, c := range cases {
		out = append(out, []byte(c))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte(`{}[]":,.-+eE0123456789\ u tfnrl` + "\x00\x1f\x7f\xc3\xa9\xff")
	base := []byte(`{"match_id":"m-000003","map_number":1,"won":true,"kast":0.75,"end_reason":"bomb \"defused\"",` +
		`"tags":["a","b"],"live":{"score":[13,11]},"note":null,"big":-12345678901234567890e-3}`)
	for range 200000 {
		b := slices.Clone(base)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = slices.Delete(b, i, i+1)
			default:
				b = slices.Insert(b, i, alphabet[rng.IntN(len(alphabet))])
			}
		}
		out = append(out, b)
	}
	return out
}

// TestJSONCheckAgreesWithEncodingJSON: the stage's JSON check gives
// encoding/json's verdict on every line, hostile ones and 200,000 random
// mutations of a record among them, so a line is staged or quarantined
// as before the check was made faster.
func TestJSONCheckAgreesWithEncodingJSON(t *testing.T) {
	valid := 0
	for _, b := range jsonCheckCases() {
		got, want := validJSON(b), json.Valid(b)
		if got != want {
			t.Fatalf("%q (%d bytes): the stage's check says %v, encoding/json %v", b[:min(len(b), 120)], len(b), got, want)
		}
		if want {
			valid++
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d valid cases: the mutations check little", valid)
	}
}

// FuzzJSONCheck holds the same over fuzzed lines (go test -fuzz).
func FuzzJSONCheck(f *testing.F) {
	for _, b := range jsonCheckCases()[:60] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("%q (%d bytes): the stage's check says %v, encoding/json %v", b[:min(len(b), 120)], len(b), got, want)
		}
	})
}

// A line naming a member twice is quarantined as a duplicate key, at any
// depth and however the name is escaped; the same names in different
// objects are not duplicates.
func TestDuplicateKey(t *testing.T) {
	for line, want := range map[string]bool{
		`{"name":"Dup","name":"Dup2"}`:                                      true,
		`{"name":"Dup","na\u006de":"Dup2"}`:                                 true,
		`{"id":"x","live_state":{"a":1,"a":2}}`:                             true,
		`{"id":"x","live_state":{"a":1,"b":{"a":2}},"a":[{"a":1},{"a":2}]}`: false,
		`{"id":"x","name":"a \"name\": here","other":"name"}`:               false,
		`{"ids":["id","id"],"id":1}`:                                        false,
		`{}`:                                                                false,
	} {
		if got := duplicateKey([]byte(line)); got != want {
			t.Errorf("%s: duplicate %v, want %v", line, got, want)
		}
	}
}

// duplicateKey's offsets into the line agree with the decoded names'
// reading on every valid line of jsonCheckCases (mutations included).
func TestDuplicateKeyFastAgreesWithDecoded(t *testing.T) {
	n := 0
	for _, b := range jsonCheckCases() {
		if !json.Valid(b) {
			continue
		}
		n++
		if got, want := duplicateKey(b), duplicateKeyDecoded(b); got != want {
			t.Fatalf("%q: duplicateKey %v, decoded %v", b[:min(len(b), 120)], got, want)
		}
	}
	if n < 1000 {
		t.Fatalf("%d valid lines", n)
	}
}

package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eodata/eo/raw"
)

// TestStageLinesKeepsFileOrderAndVerdicts stages a file of several chunks
// whose bad lines fall on and around chunk boundaries: every line comes back
// once, in file order, with the verdict its kind calls for.
func TestStageLinesKeepsFileOrderAndVerdicts(t *testing.T) {
	const maxLine = 300
	kinds := []string{"ok", "ok", "blank", "utf8", "ok", "malformed", "long", "array", "ok", "nan"}
	var b strings.Builder
	n := 3*chunkLines + 17
	for i := 1; i <= n; i++ {
		switch k := kinds[i%len(kinds)]; {
		case i == chunkLines || i == chunkLines+1 || i == 2*chunkLines:
			b.WriteString("{\"broken\": \n") // malformed exactly at the boundaries
		case k == "ok" && i%3 == 0:
			fmt.Fprintf(&b, " \t{\"line\": %d}  \n", i) // staged without the spaces
		case k == "ok":
			fmt.Fprintf(&b, "{\"line\": %d}\r\n", i)
		case k == "blank":
			b.WriteString("   \n")
		case k == "utf8":
			b.WriteString("{\"name\": \"\xff\"}\n")
		case k == "malformed":
			b.WriteString("{\"a\":1,}\n")
		case k == "long":
			b.WriteString("{\"pad\": \"" + strings.Repeat("x", maxLine) + "\"}\n")
		case k == "array":
			b.WriteString("[1, 2]\n")
		case k == "nan":
			b.WriteString("{\"price\": NaN}\n")
		}
	}
	want := func(i int) (skip bool, reason string) {
		if i == chunkLines || i == chunkLines+1 || i == 2*chunkLines {
			return false, "malformed JSON"
		}
		switch kinds[i%len(kinds)] {
		case "blank":
			return true, ""
		case "utf8":
			return false, "invalid UTF-8"
		case "malformed", "array", "nan":
			return false, "malformed JSON"
		case "long":
			return false, longLineReason
		}
		return false, ""
	}
	next := int32(0)
	err := stageLines(context.Background(), raw.NewLineReader(strings.NewReader(b.String()), maxLine), func(l *stagedLine) error {
		if l.no != next+1 {
			return fmt.Errorf("line %d after line %d", l.no, next)
		}
		next = l.no
		skip, reason := want(int(l.no))
		if l.skip != skip || l.reason != reason {
			return fmt.Errorf("line %d: skip %v reason %q, want skip %v reason %q", l.no, l.skip, l.reason, skip, reason)
		}
		if reason == "" && !skip && l.body != fmt.Sprintf("{\"line\": %d}", l.no) {
			return fmt.Errorf("line %d: body %q", l.no, l.body)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if int(next) != n {
		t.Fatalf("staged up to line %d of %d", next, n)
	}
}

// TestStageLinesStopsOnAnError: an error of the consumer or a cancelled
// context ends the staging with that error (no goroutine left blocked: the
// call returns).
func TestStageLinesStopsOnAnError(t *testing.T) {
	body := strings.Repeat("{\"a\": 1}\n", 5*chunkLines)
	boom := errors.New("appender failed")
	seen := 0
	err := stageLines(context.Background(), raw.NewLineReader(strings.NewReader(body), 100), func(l *stagedLine) error {
		if seen++; seen == chunkLines+3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || seen != chunkLines+3 {
		t.Fatalf("err %v after %d lines, want %v after %d", err, seen, boom, chunkLines+3)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen = 0
	err = stageLines(ctx, raw.NewLineReader(strings.NewReader(body), 100), func(l *stagedLine) error {
		if seen++; seen == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || seen > chunkLines {
		t.Fatalf("cancelled: err %v after %d lines", err, seen)
	}
}

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

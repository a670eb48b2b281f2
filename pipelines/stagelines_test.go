package pipelines

import (
	"context"
	"errors"
	"fmt"
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
			return false, raw.LongLineReason
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

package raw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// The line rules of an entity file (CONTRACT.md, Quarantine): what the
// pipeline's stage refuses before any field is read.

// LineProblem is why the stage quarantines a raw line (blanks trimmed, not
// empty), "" when it stages it: not UTF-8, not a JSON object (encoding/json's
// verdict), or an object that names a member twice (parsers disagree on
// which value counts: the line is rejected, not read one way).
func LineProblem(line []byte) string {
	switch {
	case !utf8.Valid(line):
		return "invalid UTF-8"
	case line[0] != '{' || !validJSON(line):
		return "malformed JSON"
	case duplicateKey(line):
		return "duplicate key"
	}
	return ""
}

// QuarantineText is a quarantined line's text: the line itself when it is
// valid UTF-8, else with every byte that is not part of a valid UTF-8
// sequence written as \xNN (DuckDB and the JSON quarantine file hold UTF-8
// text only).
func QuarantineText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// LongLineReason is the quarantine reason of a line over MaxLineBytes.
var LongLineReason = fmt.Sprintf("line longer than %d bytes", MaxLineBytes)

// validJSON is the JSON check of every raw line, with encoding/json's
// verdicts (TestJSONCheckAgreesWithEncodingJSON) at four times its speed:
// segmentio's Valid, on the stage's busiest path. segmentio's has no
// nesting limit and encoding/json refuses more than 10,000 levels: a line
// long enough to nest that deep (every level takes a byte) gets
// encoding/json's check.
func validJSON(line []byte) bool {
	if len(line) > maxNesting {
		return json.Valid(line)
	}
	return segjson.Valid(line)
}

// duplicateKey reports whether an object of line, valid JSON, names a
// member twice (at any depth; names compared as decoded).
func duplicateKey(line []byte) bool {
	var stack []keySet // one per open object or array (arrays: nil names)
	expectKey := false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{':
			stack = append(stack, keySet{obj: true})
			expectKey = true
		case '[':
			stack = append(stack, keySet{})
			expectKey = false
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].obj
		case '"':
			j, escaped := stringEnd(line, i+1)
			if expectKey {
				name := line[i+1 : j]
				if escaped {
					var s string
					json.Unmarshal(line[i:j+1], &s)
					name = []byte(s)
				}
				if stack[len(stack)-1].add(name) {
					return true
				}
			}
			expectKey = false
			i = j
		}
	}
	return false
}

// keySet is the member names of one object seen so far.
type keySet struct {
	obj   bool
	names [][]byte
}

// add records name and reports whether it was seen before.
func (k *keySet) add(name []byte) bool {
	for _, n := range k.names {
		if bytes.Equal(n, name) {
			return true
		}
	}
	k.names = append(k.names, name)
	return false
}

// stringEnd is the index of the quote closing the string whose text starts
// at i, and whether the string has an escape.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped
		}
	}
	return len(b) - 1, escaped
}

// maxNesting is encoding/json's limit on nesting (its scanner's maxNestingDepth).
const maxNesting = 10000

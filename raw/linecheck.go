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
// member twice (at any depth; names compared as decoded). It runs on every
// staged line: it keeps the open objects' names as offsets into line, in
// fixed arrays, and decodes names only on the rare line that escapes one.
func duplicateKey(line []byte) bool {
	var open [32]int32   // per open object or array: where its names start in names (-1: an array)
	var buf [64][2]int32 // names of the open objects, as [start, end) offsets into line
	names := buf[:0]
	depth := 0
	expectKey := false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{', '[':
			if depth == len(open) {
				return duplicateKeyDecoded(line)
			}
			open[depth] = -1
			if line[i] == '{' {
				open[depth] = int32(len(names))
			}
			depth++
			expectKey = line[i] == '{'
		case '}', ']':
			depth--
			if open[depth] >= 0 {
				names = names[:open[depth]]
			}
			expectKey = false
		case ',':
			expectKey = open[depth-1] >= 0
		case '"':
			j, escaped := stringEnd(line, i+1)
			if expectKey {
				if escaped {
					return duplicateKeyDecoded(line)
				}
				name := line[i+1 : j]
				for _, n := range names[open[depth-1]:] {
					if int(n[1]-n[0]) == len(name) && bytes.Equal(line[n[0]:n[1]], name) {
						return true
					}
				}
				names = append(names, [2]int32{int32(i + 1), int32(j)})
			}
			expectKey = false
			i = j
		}
	}
	return false
}

// duplicateKeyDecoded is duplicateKey for a line that escapes a name or
// nests deeper than duplicateKey keeps: names decoded, kept on the heap.
func duplicateKeyDecoded(line []byte) bool {
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
					_ = json.Unmarshal(line[i:j+1], &s)
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
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return len(b) - 1, escaped
		}
		q := i + k
		// the quote closes the string unless an odd run of backslashes
		// escapes it
		bs := 0
		for q-bs-1 >= i && b[q-bs-1] == '\\' {
			bs++
		}
		if bytes.IndexByte(b[i:q], '\\') >= 0 {
			escaped = true
		}
		if bs%2 == 0 {
			return q, escaped
		}
		i = q + 1
	}
}

// maxNesting is encoding/json's limit on nesting (its scanner's maxNestingDepth).
const maxNesting = 10000

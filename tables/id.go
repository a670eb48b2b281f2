package tables

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unsafe"
)

// ID is a resource id: a UUID, rendered canonical and lowercase.
type ID [16]byte

// String renders the canonical 36-character form.
func (id ID) String() string {
	var b [36]byte
	return string(appendIDText(b[:0], id))
}

// AppendIDJSON appends the id as a JSON string.
func AppendIDJSON(b []byte, id ID) []byte {
	b = append(b, '"')
	return append(appendIDText(b, id), '"')
}

// appendIDText appends the canonical 36-character form.
func appendIDText(b []byte, id ID) []byte {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	return append(b, s[:]...)
}

// MarshalText renders the canonical form: encoding/json writes it as a
// string (a MarshalJSON would cost a second allocation and a validation
// pass over its output, for each of the millions of ids a snapshot load
// renders).
func (id ID) MarshalText() ([]byte, error) {
	b := make([]byte, 36)
	appendIDText(b[:0], id)
	return b, nil
}

// UnmarshalJSON reads the canonical form (clients and tests decode rows).
func (id *ID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	x, ok := ParseID(s)
	if !ok {
		return fmt.Errorf("view: %q is not a canonical lowercase UUID", s)
	}
	*id = x
	return nil
}

// ParseID accepts only the canonical lowercase 36-character hyphenated form
// (any version: ids are validated by format, not by version).
func ParseID(s string) (ID, bool) { return parseIDBytes(unsafe.Slice(unsafe.StringData(s), len(s))) }

// parseIDBytes is ParseID of text held in bytes (a Parquet value), without
// a copy.
func parseIDBytes(s []byte) (ID, bool) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if s[i] == '-' {
			i--
			continue
		}
		hi, ok1 := lowerHex(s[i])
		lo, ok2 := lowerHex(s[i+1])
		if !ok1 || !ok2 {
			return id, false
		}
		id[j] = hi<<4 | lo
		j++
	}
	return id, j == 16
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// IsSlug reports whether v has a slug's shape: lowercase letters, digits
// and hyphens, 1 to 200 characters.
func IsSlug(v string) bool {
	if v == "" || len(v) > 200 {
		return false
	}
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
	}
	return true
}

package raw

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, text string, max int) []string {
	t.Helper()
	lr := NewLineReader(strings.NewReader(text), max)
	var out []string
	for {
		line, no, long, err := lr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%v:%s", no, long, line))
	}
}

func TestLineReaderSkipsAnOverlongLineAndGoesOn(t *testing.T) {
	long := strings.Repeat("x", 3*LongLinePrefix)
	got := readAll(t, "a\n"+long+"\nb\r\n\nlast", 2*LongLinePrefix)
	want := []string{"1:false:a", "2:true:" + long[:LongLinePrefix], "3:false:b", "4:false:", "5:false:last"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// a line of exactly the maximum is not over-long; one byte more is
	if got := readAll(t, "abcd\nabcde\n", 4); fmt.Sprint(got) != "[1:false:abcd 2:true:abcd]" {
		t.Fatalf("at the limit: %q", got)
	}
	// a long line bigger than the read buffer, last in the file, without a line break
	big := strings.Repeat("y", 200<<10)
	if got := readAll(t, "a\n"+big, 100<<10); len(got) != 2 || got[1] != "2:true:"+big[:LongLinePrefix] {
		t.Fatalf("unterminated long line: %d lines", len(got))
	}
	if got := readAll(t, "", 10); len(got) != 0 {
		t.Fatalf("empty input: %q", got)
	}
}

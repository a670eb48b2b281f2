package proctest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that many goroutines may write while a test
// reads it: the output of a child process (MinIO, `eo serve`) or of a
// logger under test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

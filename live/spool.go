package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// spool is a lander's events on local disk: current.ndjson takes the
// events as they arrive (one JSON event a line), and is sealed into
// seg-<n>.ndjson, numbered in arrival order, to be landed and removed. The
// folder is locked (flock) while a lander uses it. The receiving goroutine
// owns the current file; the landing goroutine reads and removes sealed
// segments only.
//
// The current segment's events are also held in memory until it is
// sealed: when a write fails (a full disk), the file is given up and the
// events wait in memory (up to maxHeld, the oldest dropped past it), and
// the next seal writes them all to a new file. A full disk costs nothing
// but memory while it lasts; only a kill during it loses the held events.
type spool struct {
	dir    string
	lock   *os.File
	cur    spoolFile
	w      *bufio.Writer
	held   []Event // the events since the last seal, in order
	broken bool    // a write failed: cur is given up, held is all there is
	// dropped counts the held events dropped past maxHeld since the last
	// successful seal.
	dropped int
	next    uint64 // the next sealed segment's number
	// create opens the current file (os.OpenFile; tests inject failures).
	create func(name string) (spoolFile, error)
}

// spoolFile is what the spool needs of its current file.
type spoolFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// maxHeld bounds the events held in memory while the spool cannot be
// written (about 100 MB of events).
const maxHeld = 100_000

func createSpoolFile(name string) (spoolFile, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
}

const (
	spoolCurrent = "current.ndjson"
	spoolPrefix  = "seg-"
	spoolSuffix  = ".ndjson"
)

// openSpool opens (creating) the spool in dir and seals what a stopped
// lander left in its current file.
func openSpool(dir string) (*spool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("live: spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("live: spool: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("live: another lander uses the spool %s (one lander per work folder): %w", dir, err)
	}
	s := &spool{dir: dir, lock: lock, create: createSpoolFile}
	segs, err := s.sealed()
	if err != nil {
		s.close()
		return nil, err
	}
	if len(segs) > 0 {
		s.next = segNumber(segs[len(segs)-1]) + 1
	}
	cur := filepath.Join(dir, spoolCurrent)
	if fi, err := os.Stat(cur); err == nil && fi.Size() > 0 {
		if err := os.Rename(cur, s.segPath(s.next)); err != nil {
			s.close()
			return nil, fmt.Errorf("live: spool: %w", err)
		}
		s.next++
	}
	return s, nil
}

func (s *spool) segPath(n uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%020d%s", spoolPrefix, n, spoolSuffix))
}

func segNumber(path string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), spoolPrefix), spoolSuffix), 10, 64)
	return n
}

// add appends ev to the current file; flush hands the buffered lines to
// the operating system (the caller says so when no other event is waiting:
// a killed process loses at most what it had not handed over). A write
// that fails leaves ev, and the segment's other events, held in memory for
// the next seal.
func (s *spool) add(ev Event, flush bool) {
	if s.broken && len(s.held) >= maxHeld {
		// Only while the disk refuses: held is then all there is of them.
		s.held = s.held[1:]
		s.dropped++
	}
	s.held = append(s.held, ev)
	if s.broken {
		return
	}
	if err := s.write(ev, flush); err != nil {
		s.giveUp()
	}
}

// due reports whether the current segment should be sealed now, before
// its interval ends: it holds maxHeld events that are on disk (a feed
// faster than maxHeld an interval), so memory stays bounded without
// dropping what the file has.
func (s *spool) due() bool { return !s.broken && len(s.held) >= maxHeld }

func (s *spool) write(ev Event, flush bool) error {
	if s.cur == nil {
		f, err := s.create(filepath.Join(s.dir, spoolCurrent))
		if err != nil {
			return err
		}
		s.cur, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, _ = s.w.Write(line)
	if err := s.w.WriteByte('\n'); err != nil {
		return err
	}
	if flush {
		return s.w.Flush()
	}
	return nil
}

// giveUp closes and removes the current file after a failed write: what it
// holds is incomplete, and the held events will be written again.
func (s *spool) giveUp() {
	s.broken = true
	if s.cur != nil {
		s.cur.Close()
		s.cur, s.w = nil, nil
	}
	os.Remove(filepath.Join(s.dir, spoolCurrent))
}

// seal makes the held events the next segment: flushed, synced and renamed
// (written again first, after a failed write). false when none is held; on
// an error they stay held for the next seal. dropped is how many held
// events were dropped past maxHeld since the last seal that worked.
func (s *spool) seal() (sealed bool, dropped int, err error) {
	if len(s.held) == 0 {
		return false, 0, nil
	}
	if s.broken {
		s.broken = false
		for i := range s.held {
			if err = s.write(s.held[i], false); err != nil {
				break
			}
		}
	}
	if err == nil {
		f := s.cur
		s.cur = nil
		if err = errors.Join(s.w.Flush(), f.Sync(), f.Close()); err == nil {
			err = os.Rename(filepath.Join(s.dir, spoolCurrent), s.segPath(s.next))
		}
	}
	if err != nil {
		s.giveUp()
		return false, s.dropped, err
	}
	s.next++
	s.held = s.held[:0]
	dropped, s.dropped = s.dropped, 0
	if d, err := os.Open(s.dir); err == nil { // the rename survives a power loss too
		_ = d.Sync()
		d.Close()
	}
	return true, dropped, nil
}

// sealed lists the sealed segments, oldest first.
func (s *spool) sealed() ([]string, error) {
	segs, err := filepath.Glob(filepath.Join(s.dir, spoolPrefix+"*"+spoolSuffix))
	slices.Sort(segs) // zero-padded numbers: name order is arrival order
	return segs, err
}

// sizes lists the sealed segments, oldest first, and their sizes.
func (s *spool) sizes() ([]string, []int64) {
	segs, _ := s.sealed()
	sizes := make([]int64, len(segs))
	for i, p := range segs {
		if fi, err := os.Stat(p); err == nil {
			sizes[i] = fi.Size()
		}
	}
	return segs, sizes
}

// backlog is the sealed segments' count and bytes.
func (s *spool) backlog() (n int, size int64) {
	segs, sizes := s.sizes()
	for _, b := range sizes {
		size += b
	}
	return len(segs), size
}

// bound removes the oldest sealed segments while the spool is over max
// bytes; it returns how many segments and events it removed.
func (s *spool) bound(max int64) (dropped, events int) {
	segs, sizes := s.sizes()
	var total int64
	for _, b := range sizes {
		total += b
	}
	for i := 0; i < len(segs) && total > max; i++ {
		if body, err := os.ReadFile(segs[i]); err == nil {
			events += bytes.Count(body, []byte{'\n'})
		}
		if os.Remove(segs[i]) == nil {
			dropped++
			total -= sizes[i]
		}
	}
	return dropped, events
}

// close releases the spool's lock (and the current file, unsealed: the
// next lander seals it).
func (s *spool) close() {
	if s.cur != nil {
		s.w.Flush()
		s.cur.Close()
	}
	s.lock.Close()
}

// readSegment decodes a segment's events; bad counts the lines that are not
// an event (a line cut short by a killed process).
func readSegment(path string) (evs []Event, bad int, err error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	for line := range bytes.Lines(body) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			bad++
			continue
		}
		evs = append(evs, ev)
	}
	return evs, bad, nil
}

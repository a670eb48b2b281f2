package live

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fullDisk makes the spool's file writes fail with ENOSPC while it is set.
type fullDisk struct{ full atomic.Bool }

type diskFile struct {
	f *os.File
	d *fullDisk
}

func (w diskFile) Write(p []byte) (int, error) {
	if w.d.full.Load() {
		return 0, &os.PathError{Op: "write", Path: w.f.Name(), Err: syscall.ENOSPC}
	}
	return w.f.Write(p)
}
func (w diskFile) Sync() error  { return w.f.Sync() }
func (w diskFile) Close() error { return w.f.Close() }

func spoolEvent(i int) Event {
	return Event{Kind: KindPrice, MatchID: "m", Book: "b", Market: "match_winner", Outcome: "home",
		Price: 1.5, CapturedAt: time.Unix(int64(i), 0).UTC()}
}

// TestSpoolHoldsEventsWhileTheDiskIsFull: while writes fail, the events of
// the segment wait in memory; the first seal after the disk has room
// writes them all, in order, into one segment, and nothing is left of the
// file given up.
func TestSpoolHoldsEventsWhileTheDiskIsFull(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	disk := &fullDisk{}
	s.create = func(name string) (spoolFile, error) {
		f, err := createSpoolFile(name)
		if err != nil {
			return nil, err
		}
		return diskFile{f.(*os.File), disk}, nil
	}
	n := 0
	add := func(k int) {
		for range k {
			s.add(spoolEvent(n), n%7 == 0)
			n++
		}
	}
	add(10)
	if ok, _, err := s.seal(); !ok || err != nil {
		t.Fatalf("seal: %v %v", ok, err)
	}
	disk.full.Store(true)
	add(20)
	for range 2 {
		if ok, _, err := s.seal(); ok || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("seal on a full disk: %v %v", ok, err)
		}
	}
	disk.full.Store(false)
	add(5)
	if ok, dropped, err := s.seal(); !ok || err != nil || dropped != 0 {
		t.Fatalf("seal after the disk has room: %v %d %v", ok, dropped, err)
	}
	segs, _ := s.sealed()
	if len(segs) != 2 {
		t.Fatalf("%d segments, want 2", len(segs))
	}
	for i, seg := range segs {
		evs, bad, err := readSegment(seg)
		if err != nil || bad != 0 {
			t.Fatalf("segment %d: %v, %d bad lines", i, err, bad)
		}
		if len(evs) != []int{10, 25}[i] {
			t.Fatalf("segment %d holds %d events", i, len(evs))
		}
		for j, ev := range evs {
			if at := ev.CapturedAt.Unix(); at != int64(j+[]int{0, 10}[i]) {
				t.Fatalf("segment %d event %d is event %d", i, j, at)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, spoolCurrent)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the current file is still there after the seal: %v", err)
	}

	// Past maxHeld, the oldest held events go first, and the seal says how
	// many.
	disk.full.Store(true)
	add(maxHeld + 3)
	disk.full.Store(false)
	ok, dropped, err := s.seal()
	if !ok || err != nil || dropped != 3 {
		t.Fatalf("seal after %d held: %v, %d dropped, %v", maxHeld+3, ok, dropped, err)
	}
	segs, _ = s.sealed()
	evs, _, _ := readSegment(segs[len(segs)-1])
	if len(evs) != maxHeld || evs[0].CapturedAt.Unix() != int64(35+3) {
		t.Fatalf("the last segment holds %d events from %d", len(evs), evs[0].CapturedAt.Unix())
	}

	// With the disk fine, maxHeld events written make the segment due for
	// sealing; none is dropped (they are on disk).
	add(maxHeld + 1)
	if !s.due() {
		t.Fatal("a segment of more than maxHeld events on disk is not due for sealing")
	}
	if ok, dropped, err := s.seal(); !ok || err != nil || dropped != 0 {
		t.Fatalf("seal of a due segment: %v, %d dropped, %v", ok, dropped, err)
	}
	segs, _ = s.sealed()
	if evs, _, _ = readSegment(segs[len(segs)-1]); len(evs) != maxHeld+1 {
		t.Fatalf("the due segment holds %d events, want %d", len(evs), maxHeld+1)
	}
}

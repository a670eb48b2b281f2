package access

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is returned when a database file (counters.db, access.db)
// cannot be read: cut short or corrupt. Nothing is changed in it.
var ErrDamaged = errors.New("database file is damaged")

// ErrInUse is returned when another process holds a database file (bbolt
// lets one process write it) past the open's timeout.
var ErrInUse = errors.New("database file is in use by another process")

// openBoltFile opens the bbolt database at path and refuses, with
// ErrDamaged, one that is damaged, instead of crashing on it.
//
// bbolt maps the file into memory and follows the page numbers it holds. In
// a file cut short (a full disk, an interrupted copy or restore) the first
// read past its end is a SIGBUS, which the Go runtime does not turn into a
// panic: `eo serve` on a truncated counters.db died with "fatal error:
// fault" and a dump of every goroutine. So the pages the file claims (its
// high-water mark, which bbolt never reads past) must lie within it
// (boltSizeOK), so that no read, on any goroutine, reaches its end; and the
// open runs with faults turned into panics (debug.SetPanicOnFault, this
// goroutine only) for damage that check does not see.
//
// inUse says who else may hold the file and what to do, for ErrInUse.
func openBoltFile(path string, o *bolt.Options, inUse string) (db *bolt.DB, err error) {
	if err := checkBoltFile(path); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// The half-opened handle cannot be closed: its file stays
			// open (and locked) until the process ends, as it will for
			// every caller here, which fails to start.
			why := fmt.Sprint(r)
			if _, fault := r.(interface{ Addr() uintptr }); fault {
				why = "reading it faulted: its pages reach past the end of the file"
			}
			db, err = nil, damaged(why)
		}
	}()
	db, err = bolt.Open(path, 0o600, o)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			// The bare "timeout" said nothing of why.
			return nil, fmt.Errorf("%w (waited %s): %s", ErrInUse, o.Timeout, inUse)
		}
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
			return nil, damaged(err.Error())
		}
		return nil, err
	}
	return db, nil
}

// checkBoltFile runs boltSizeOK on the file at path, if there is one with
// anything in it (bbolt creates a missing or empty file).
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	return boltSizeOK(f, fi.Size())
}

// boltSizeOK checks that a bbolt file of size bytes holds every page its
// meta pages claim, reading those two pages only. A meta page is at offset
// 0 and at one page size; its high-water page id is at byte 56 of the page
// (16-byte page header, then magic, version, page size, flags, root bucket,
// freelist, pgid). bbolt itself checks the meta pages' checksums.
func boltSizeOK(r io.ReaderAt, size int64) error {
	const magic = 0xED0CDAED
	var meta [64]byte
	if size < 64 {
		return damaged(fmt.Sprintf("%d bytes: not a bbolt file, or cut short", size))
	}
	if _, err := r.ReadAt(meta[:], 0); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(meta[16:]) != magic {
		return damaged("not a bbolt file (no meta page at its start)")
	}
	ps := int64(binary.LittleEndian.Uint32(meta[24:]))
	if ps < 512 || ps > 1<<20 || size < 2*ps {
		return damaged(fmt.Sprintf("%d bytes, pages of %d: no second meta page", size, ps))
	}
	for _, off := range []int64{0, ps} {
		if _, err := r.ReadAt(meta[:], off); err != nil {
			return err
		}
		if binary.LittleEndian.Uint32(meta[16:]) != magic {
			continue // a torn meta page: bbolt uses the other one
		}
		if hw := int64(binary.LittleEndian.Uint64(meta[56:])); hw*ps > size {
			return damaged(fmt.Sprintf("its meta page claims %d pages of %d bytes, the file has %d bytes", hw, ps, size))
		}
	}
	return nil
}

// damaged is ErrDamaged with its reason and what to do (the callers name
// the file).
func damaged(why string) error {
	return fmt.Errorf("%w: %s (cut short or overwritten: a full disk, an interrupted copy or restore?); "+
		"restore it from a copy, or move it aside to start with a new one", ErrDamaged, why)
}

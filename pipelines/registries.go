package pipelines

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/eodata/eo/store"
)

// MintID returns the service id of an upstream key: a UUIDv7 whose time is
// when the key was first seen (its batch's landing time) and whose remaining
// bits come from a hash of the kind and key. The registry in the store keeps
// ids stable; minting deterministically means a full rebuild from the same
// raw batches reproduces them even if the registry were lost.
func MintID(kind, key string, firstSeen time.Time) uuid.UUID {
	h := sha256.Sum256([]byte(kind + "\x00" + key))
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(firstSeen.UnixMilli()))
	copy(u[0:6], ms[2:8])
	copy(u[6:], h[:10])
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}

// MaxSlugLen is the longest slug: a slug is a URL path segment, and a name
// can expand (NFKD turns "ⅷ" into "viii"), so it is cut, at a hyphen when
// there is one in its second half.
const MaxSlugLen = 100

// Slugify turns a display name into a slug: lowercase ASCII letters and
// digits separated by single hyphens, diacritics removed, at most
// MaxSlugLen bytes.
func Slugify(name string) string {
	return cutSlug(slugify(name), MaxSlugLen)
}

// cutSlug shortens a slug to at most n bytes (all ASCII), at its last hyphen
// when that keeps at least half of it.
func cutSlug(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '-'); i >= n/2 {
		s = s[:i]
	}
	return strings.TrimRight(s, "-")
}

func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToLower(r))
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// State keys of the id and slug registries in the store.
const (
	idsKey   = "state/ids.parquet"
	slugsKey = "state/slugs.parquet"
)

// loadRegistries reads the id and slug registries from the store (none
// on the first run).
func (r *run) loadRegistries(ctx context.Context) error {
	if err := r.do(ctx, "registries/tables.sql", nil); err != nil {
		return err
	}
	for key, table := range map[string]string{idsKey: "id_map", slugsKey: "slug_map"} {
		path := filepath.Join(r.o.WorkDir, filepath.Base(key))
		b, err := store.GetBytes(ctx, r.o.Store, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		if err := r.do(ctx, "registries/load.sql", map[string]string{"Table": table, "Path": path}); err != nil {
			return fmt.Errorf("load %s: %w", key, err)
		}
	}
	return nil
}

// mintIDs gives every tournament, team, player and match seen for the first
// time its id.
func (r *run) mintIDs(ctx context.Context) (int64, error) {
	type rec struct {
		kind, key string
		seq       int
	}
	recs, err := query(ctx, r, "registries/new_keys.sql", nil, nil, func(x *rec) []any { return []any{&x.kind, &x.key, &x.seq} })
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	err = appendRows(ctx, r.db, "new_ids", len(recs), func(i int) []any {
		x := recs[i]
		// The game's id is fixed: the first batch's time would tie it to a
		// particular history.
		seen := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		if x.kind != "game" {
			seen = r.batches[x.seq-r.seqBase].LandedAt
		}
		return []any{x.kind, x.key, MintID(x.kind, x.key, seen).String(), seen}
	})
	if err != nil {
		return 0, err
	}
	return int64(len(recs)), r.do(ctx, "registries/save_new_ids.sql", nil)
}

// assignSlugs keeps the slug of every key whose name did not change and gives
// new and renamed keys a fresh slug, unique within its kind.
func (r *run) assignSlugs(ctx context.Context) (int64, error) {
	type rec struct {
		kind, key, name string
		oldName, slug   sql.NullString
		seen            time.Time
	}
	recs, err := query(ctx, r, "registries/slug_candidates.sql", nil, nil, func(x *rec) []any {
		return []any{&x.kind, &x.key, &x.name, &x.oldName, &x.slug, &x.seen}
	})
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	final := make([]string, len(recs))
	// First pass: keys whose name is unchanged keep their slug.
	for i, x := range recs {
		if x.slug.Valid && x.oldName.Valid && x.oldName.String == x.name {
			final[i] = x.slug.String
			used[x.kind+"/"+x.slug.String] = true
		}
	}
	changed := 0
	for i, x := range recs {
		if final[i] != "" {
			continue
		}
		base := Slugify(x.name)
		if base == "" {
			h := sha256.Sum256([]byte(x.key))
			base = x.kind + "-" + hex.EncodeToString(h[:3])
		}
		slug := base
		for n := 2; used[x.kind+"/"+slug]; n++ {
			sfx := "-" + strconv.Itoa(n)
			slug = cutSlug(base, MaxSlugLen-len(sfx)) + sfx
		}
		used[x.kind+"/"+slug] = true
		final[i] = slug
		changed++
	}
	if err := r.do(ctx, "registries/slug_map_table.sql", nil); err != nil {
		return 0, err
	}
	err = appendRows(ctx, r.db, "slug_map", len(recs), func(i int) []any {
		return []any{recs[i].kind, recs[i].key, recs[i].name, final[i]}
	})
	return int64(changed), err
}

package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Open builds a store from a location:
//
//   - a plain path or file:///path opens a Local store in that folder;
//   - s3://bucket/prefix opens an S3 store with that bucket and prefix and
//     the endpoint, credentials and call bounds of s3 (its Bucket and Prefix
//     are ignored); s3.Endpoint is required.
//
// Open checks that an S3 bucket exists; OpenLazy does not contact the
// server (for the edge, which serves its local cache while the store is
// down).
func Open(ctx context.Context, location string, s3 S3Options) (Store, error) {
	return open(ctx, location, s3, false)
}

// OpenLazy is Open without contacting an S3 server.
func OpenLazy(ctx context.Context, location string, s3 S3Options) (Store, error) {
	return open(ctx, location, s3, true)
}

func open(ctx context.Context, location string, s3 S3Options, lazy bool) (Store, error) {
	if strings.HasPrefix(location, "s3://") {
		return openS3(ctx, location, s3, lazy)
	}
	dir, err := localDir(location)
	if err != nil {
		return nil, err
	}
	return openLocal(dir)
}

// localDir is the folder of a location that is not s3://: a plain path or
// a file:// URL.
func localDir(location string) (string, error) {
	switch {
	case location == "":
		return "", errors.New("store: open store: empty location")
	case strings.HasPrefix(location, "file://"):
		u, err := url.Parse(location)
		if err != nil {
			return "", fmt.Errorf("store: open store %q: %w", location, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("store: open store %q: file URLs must not name a host", location)
		}
		if u.Path == "" {
			return "", fmt.Errorf("store: open store %q: empty path", location)
		}
		return u.Path, nil
	case strings.Contains(location, "://"):
		return "", fmt.Errorf("store: open store %q: unsupported scheme (want a path, file:// or s3://)", location)
	}
	return location, nil
}

// MustExist is an error when location is a local folder that does not
// exist (or is not a folder), for a command that reads what a store holds:
// Open would create it, and a mistyped path would read as an empty store
// and leave a folder behind. An s3:// location passes: Open checks that its
// bucket exists.
func MustExist(location string) error {
	if strings.HasPrefix(location, "s3://") {
		return nil
	}
	dir, err := localDir(location)
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("store %s does not exist", location)
	case err != nil:
		return fmt.Errorf("store %s: %w", location, err)
	case !fi.IsDir():
		return fmt.Errorf("store %s is not a folder", location)
	}
	return nil
}

// openLocal avoids returning a typed nil inside a non-nil Store.
func openLocal(dir string) (Store, error) {
	l, err := NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func openS3(ctx context.Context, location string, o S3Options, lazy bool) (Store, error) {
	rest := strings.TrimPrefix(location, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("store: open store %q: missing bucket", location)
	}
	if o.Endpoint == "" {
		return nil, fmt.Errorf("store: open store %q: no S3 endpoint given", location)
	}
	o.Bucket, o.Prefix, o.SkipBucketCheck = bucket, prefix, lazy
	s, err := NewS3(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

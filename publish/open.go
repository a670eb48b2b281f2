package publish

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Open builds a store from a location:
//
//   - a plain path or file:///path opens a Local store in that folder;
//   - s3://bucket/prefix opens an S3 store whose endpoint and credentials
//     come from EO_S3_ENDPOINT, EO_S3_ACCESS_KEY, EO_S3_SECRET_KEY,
//     EO_S3_REGION and EO_S3_USE_SSL ("true"/"false", default false);
//     EO_S3_IO_TIMEOUT (a duration, default 20s) and EO_S3_MAX_RETRIES
//     (default 3) bound every call (S3Options.IOTimeout, MaxRetries).
//
// Open checks that an S3 bucket exists; OpenLazy does not contact the
// server (for the edge, which serves its local cache while the store is
// down).
func Open(ctx context.Context, location string) (Store, error) { return open(ctx, location, false) }

// OpenLazy is Open without contacting an S3 server.
func OpenLazy(ctx context.Context, location string) (Store, error) { return open(ctx, location, true) }

func open(ctx context.Context, location string, lazy bool) (Store, error) {
	switch {
	case location == "":
		return nil, errors.New("publish: open store: empty location")
	case strings.HasPrefix(location, "s3://"):
		return openS3(ctx, location, lazy)
	case strings.HasPrefix(location, "file://"):
		u, err := url.Parse(location)
		if err != nil {
			return nil, fmt.Errorf("publish: open store %q: %w", location, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("publish: open store %q: file URLs must not name a host", location)
		}
		if u.Path == "" {
			return nil, fmt.Errorf("publish: open store %q: empty path", location)
		}
		return openLocal(u.Path)
	case strings.Contains(location, "://"):
		return nil, fmt.Errorf("publish: open store %q: unsupported scheme (want a path, file:// or s3://)", location)
	default:
		return openLocal(location)
	}
}

// openLocal avoids returning a typed nil inside a non-nil Store.
func openLocal(dir string) (Store, error) {
	l, err := NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func openS3(ctx context.Context, location string, lazy bool) (Store, error) {
	rest := strings.TrimPrefix(location, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("publish: open store %q: missing bucket", location)
	}
	endpoint := os.Getenv("EO_S3_ENDPOINT")
	if endpoint == "" {
		return nil, fmt.Errorf("publish: open store %q: EO_S3_ENDPOINT is not set", location)
	}
	useSSL := false
	if v := os.Getenv("EO_S3_USE_SSL"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("publish: open store %q: EO_S3_USE_SSL=%q: want true or false", location, v)
		}
		useSSL = b
	}
	o := S3Options{SkipBucketCheck: lazy}
	if v := os.Getenv("EO_S3_IO_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("publish: open store %q: EO_S3_IO_TIMEOUT=%q: want a positive duration such as 20s", location, v)
		}
		o.IOTimeout = d
	}
	if v := os.Getenv("EO_S3_MAX_RETRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("publish: open store %q: EO_S3_MAX_RETRIES=%q: want a positive count of attempts", location, v)
		}
		o.MaxRetries = n
	}
	s, err := NewS3(ctx, S3Options{
		SkipBucketCheck: o.SkipBucketCheck, IOTimeout: o.IOTimeout, MaxRetries: o.MaxRetries,
		Endpoint:  endpoint,
		Bucket:    bucket,
		Prefix:    prefix,
		AccessKey: os.Getenv("EO_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("EO_S3_SECRET_KEY"),
		Region:    os.Getenv("EO_S3_REGION"),
		UseSSL:    useSSL,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Open builds a store from a location:
//
//   - a plain path or file:///path opens a Local store in that folder;
//   - s3://bucket/prefix opens an S3 store whose endpoint and credentials
//     come from EO_S3_ENDPOINT, EO_S3_ACCESS_KEY, EO_S3_SECRET_KEY,
//     EO_S3_REGION and EO_S3_USE_SSL ("true"/"false", default false).
func Open(ctx context.Context, location string) (Store, error) {
	switch {
	case location == "":
		return nil, errors.New("publish: open store: empty location")
	case strings.HasPrefix(location, "s3://"):
		return openS3(ctx, location)
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

func openS3(ctx context.Context, location string) (Store, error) {
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
	s, err := NewS3(ctx, S3Options{
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

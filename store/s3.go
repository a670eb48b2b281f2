package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options configures an S3-compatible store (AWS S3, MinIO, ...).
type S3Options struct {
	// Endpoint is the server as host[:port], e.g. "127.0.0.1:9000" or
	// "s3.amazonaws.com". An "http://" or "https://" scheme is accepted and
	// then decides UseSSL.
	Endpoint string
	// Bucket is the bucket holding every object of the store.
	Bucket string
	// Prefix is prepended (with a '/') to every key, so several stores can
	// share one bucket. Leading and trailing '/' are ignored; empty means the
	// bucket root.
	Prefix string
	// AccessKey is the access key ID. Empty together with SecretKey means
	// anonymous access.
	AccessKey string
	// SecretKey is the secret access key. It is never printed by String.
	SecretKey string
	// Region is the bucket region, e.g. "us-east-1"; empty lets the client
	// discover it.
	Region string
	// UseSSL selects HTTPS instead of plain HTTP.
	UseSSL bool
	// CreateBucket makes the bucket when it does not exist yet; without it
	// a missing bucket is an error.
	CreateBucket bool
	// SkipBucketCheck builds the store without contacting the server (the
	// edge starts from its local cache when the store is down; its calls
	// fail until the server is back). CreateBucket is then ignored.
	SkipBucketCheck bool
	// IOTimeout fails a call when no byte moves to or from the server for
	// this long: a dial, a response header, or any read or write of a
	// transfer of any size (default 20s). A server that accepts
	// connections and never answers (frozen, overloaded) costs a call at
	// most MaxRetries times this plus backoff, never a hang.
	IOTimeout time.Duration
	// MaxRetries is how many attempts a call makes, with minio-go's
	// jittered backoff between them (default 3).
	MaxRetries int
}

// Defaults of S3Options.
const (
	DefaultS3IOTimeout  = 20 * time.Second
	DefaultS3MaxRetries = 3
)

// S3 is a Store backed by an S3-compatible bucket, via minio-go. Single
// PutObject calls are atomic on S3: readers see the old or the new object.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or "some/prefix/"
	endpoint string
	secure   bool
}

// NewS3 connects to the bucket described by o and checks that it exists
// (creating it when o.CreateBucket is set).
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	endpoint, secure := o.Endpoint, o.UseSSL
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		endpoint, secure = strings.TrimPrefix(endpoint, "http://"), false
	case strings.HasPrefix(endpoint, "https://"):
		endpoint, secure = strings.TrimPrefix(endpoint, "https://"), true
	}
	endpoint = strings.TrimSuffix(endpoint, "/")
	if endpoint == "" {
		return nil, errors.New("store: s3 store: empty endpoint")
	}
	if o.Bucket == "" {
		return nil, errors.New("store: s3 store: empty bucket")
	}
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		if err := ValidKey(prefix); err != nil {
			return nil, fmt.Errorf("store: s3 store: bad prefix: %w", err)
		}
		prefix += "/"
	}
	var creds *credentials.Credentials
	if o.AccessKey != "" || o.SecretKey != "" {
		creds = credentials.NewStaticV4(o.AccessKey, o.SecretKey, "")
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = DefaultS3IOTimeout
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = DefaultS3MaxRetries
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("store: s3 store %s: %w", endpoint, err)
	}
	dialer := &net.Dialer{Timeout: o.IOTimeout, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &idleTimeoutConn{Conn: c, timeout: o.IOTimeout}, nil
	}
	tr.ResponseHeaderTimeout = o.IOTimeout
	tr.ExpectContinueTimeout = time.Second
	client, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: o.Region,
		Transport: tr, MaxRetries: o.MaxRetries})
	if err != nil {
		return nil, fmt.Errorf("store: s3 store %s: %w", endpoint, err)
	}
	s := &S3{client: client, bucket: o.Bucket, prefix: prefix, endpoint: endpoint, secure: secure}
	if o.SkipBucketCheck {
		return s, nil
	}
	exists, err := client.BucketExists(ctx, o.Bucket)
	if err != nil {
		return nil, fmt.Errorf("store: s3 store %s: check bucket: %w", s, err)
	}
	if !exists {
		if !o.CreateBucket {
			return nil, fmt.Errorf("store: s3 store %s: bucket %q does not exist", s, o.Bucket)
		}
		err := client.MakeBucket(ctx, o.Bucket, minio.MakeBucketOptions{Region: o.Region})
		if err != nil {
			code := minio.ToErrorResponse(err).Code
			if code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("store: s3 store %s: create bucket: %w", s, err)
			}
		}
	}
	return s, nil
}

func (s *S3) objectName(key string) string { return s.prefix + key }

// idleTimeoutConn fails a read or write that makes no progress for timeout:
// each call pushes the deadline out again, so a large transfer that keeps
// moving is never cut, and a peer that stopped answering is noticed.
type idleTimeoutConn struct {
	net.Conn
	timeout time.Duration
}

func (c *idleTimeoutConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Write pushes out the read deadline too: the transport keeps a read
// pending on a pooled connection, and a request written on it must not
// inherit that read's older deadline.
func (c *idleTimeoutConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func isS3NotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == "NoSuchKey" || resp.Code == "NotFound" || resp.StatusCode == http.StatusNotFound
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: s3 put: %w", err)
	}
	if size >= 0 {
		if sk, ok := r.(io.Seeker); ok {
			// Seekable readers keep minio-go's retries; check their length now.
			cur, err1 := sk.Seek(0, io.SeekCurrent)
			end, err2 := sk.Seek(0, io.SeekEnd)
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("store: s3 put %s: measure reader: %w", key, err)
			}
			if _, err := sk.Seek(cur, io.SeekStart); err != nil {
				return fmt.Errorf("store: s3 put %s: measure reader: %w", key, err)
			}
			if end-cur != size {
				return fmt.Errorf("store: s3 put %s: reader holds %d bytes, want %d", key, end-cur, size)
			}
		} else {
			r = &exactReader{r: r, left: size}
		}
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.objectName(key), r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("store: s3 put %s: %w", key, err)
	}
	if size >= 0 && info.Size != size {
		return fmt.Errorf("store: s3 put %s: stored %d bytes, want %d", key, info.Size, size)
	}
	return nil
}

// exactReader turns an early EOF into io.ErrUnexpectedEOF, so a short
// reader fails the upload instead of being retried or stored short.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = fmt.Errorf("reader ended %d bytes early: %w", e.left, io.ErrUnexpectedEOF)
	}
	return n, err
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, fmt.Errorf("store: s3 get: %w", err)
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.objectName(key), minio.GetObjectOptions{})
	if err != nil {
		if isS3NotFound(err) {
			return nil, fmt.Errorf("store: s3 get %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("store: s3 get %s: %w", key, err)
	}
	// GetObject is lazy; Stat issues the request so a missing key fails here.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		if isS3NotFound(err) {
			return nil, fmt.Errorf("store: s3 get %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("store: s3 get %s: %w", key, err)
	}
	return obj, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("store: s3 stat: %w", err)
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.objectName(key), minio.StatObjectOptions{})
	if err != nil {
		if isS3NotFound(err) {
			return ObjectInfo{}, fmt.Errorf("store: s3 stat %s: %w", key, ErrNotFound)
		}
		return ObjectInfo{}, fmt.Errorf("store: s3 stat %s: %w", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine on early return
	var out []ObjectInfo
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{
		Prefix:    s.prefix + prefix,
		Recursive: true,
	}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: s3 list %q: %w", prefix, o.Err)
		}
		key, ok := strings.CutPrefix(o.Key, s.prefix)
		if !ok || key == "" || strings.HasSuffix(key, "/") {
			continue
		}
		out = append(out, ObjectInfo{Key: key, Size: o.Size, ModTime: o.LastModified})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: s3 delete: %w", err)
	}
	err := s.client.RemoveObject(ctx, s.bucket, s.objectName(key), minio.RemoveObjectOptions{})
	if err != nil && !isS3NotFound(err) {
		return fmt.Errorf("store: s3 delete %s: %w", key, err)
	}
	return nil
}

// Update implements Store with conditional writes: the PUT carries
// If-Match with the ETag of the bytes read (If-None-Match: * when there
// were none), and a write refused because the object changed meanwhile
// (412, or 404 when it was deleted) reads again and calls fn again.
func (s *S3) Update(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("store: s3 update: %w", err)
	}
	for attempt := range MaxUpdateAttempts {
		if attempt > 0 {
			// Writers that lost together would meet again: a random pause
			// that grows with the attempts spreads them out.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(20*time.Millisecond)))):
			}
		}
		cur, etag, err := s.getVersion(ctx, key)
		if err != nil {
			return fmt.Errorf("store: s3 update %s: %w", key, err)
		}
		next, err := fn(cur)
		if err != nil {
			return err
		}
		opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
		if cur == nil {
			opts.SetMatchETagExcept("*")
		} else {
			opts.SetMatchETag(etag)
		}
		_, err = s.client.PutObject(ctx, s.bucket, s.objectName(key), bytes.NewReader(next), int64(len(next)), opts)
		if err == nil {
			return nil
		}
		if resp := minio.ToErrorResponse(err); resp.StatusCode != http.StatusPreconditionFailed &&
			resp.Code != "PreconditionFailed" && !(cur != nil && isS3NotFound(err)) {
			return fmt.Errorf("store: s3 update %s: %w", key, err)
		}
	}
	return fmt.Errorf("store: s3 update %s: %d attempts: %w", key, MaxUpdateAttempts, ErrConflict)
}

// getVersion reads an object and the ETag of what it read (nil, "" when
// it does not exist), in one GET: minio-go's lazy Object would fetch the
// body in a second request, conditional on the first one's ETag.
func (s *S3) getVersion(ctx context.Context, key string) ([]byte, string, error) {
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.objectName(key), minio.GetObjectOptions{})
	if err != nil {
		if isS3NotFound(err) {
			return nil, "", nil
		}
		return nil, "", err
	}
	defer body.Close()
	b, err := readSized(ctx, body, info.Size)
	if err != nil {
		return nil, "", err
	}
	if b == nil {
		b = []byte{} // an empty object exists
	}
	return b, info.ETag, nil
}

// String implements Store.
func (s *S3) String() string {
	scheme := "http"
	if s.secure {
		scheme = "https"
	}
	return fmt.Sprintf("s3://%s/%s (%s://%s)", s.bucket, s.prefix, scheme, s.endpoint)
}

// Presigner is a Store that can hand out a time-limited URL to read one
// object without credentials (S3): how the edge hands a customer a
// snapshot's table file (GET /v1/{game}/exports/{table}) without the bytes
// passing through it.
type Presigner interface {
	// PresignGet returns a URL that GETs key until expiry has passed. It
	// computes a signature: no call to the server once the bucket's
	// region is known (set, or learnt by an earlier call of the client).
	PresignGet(ctx context.Context, key string, expiry time.Duration) (*url.URL, error)
}

// PresignGet implements Presigner. The URL names the endpoint the store
// was opened with (EO_S3_ENDPOINT): customers must be able to reach it.
func (s *S3) PresignGet(ctx context.Context, key string, expiry time.Duration) (*url.URL, error) {
	if err := ValidKey(key); err != nil {
		return nil, fmt.Errorf("store: s3 presign: %w", err)
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, s.objectName(key), expiry, nil)
	if err != nil {
		return nil, fmt.Errorf("store: s3 presign %s: %w", key, err)
	}
	return u, nil
}

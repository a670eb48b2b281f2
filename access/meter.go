package access

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// PlanLimits are one plan's limits. Zero means "no such limit".
type PlanLimits struct {
	// Burst is the token bucket capacity; Rate its refill in tokens/second.
	Burst float64 `json:"burst"`
	Rate  float64 `json:"rate"`
	// MonthlyQuota is requests per calendar month (UTC), per account.
	MonthlyQuota int64 `json:"monthly_quota"`
	// TrialTotal is the whole trial allowance, per account, from the trial
	// start; TrialPerEndpoint the ceiling on any one endpoint.
	TrialTotal       int64 `json:"trial_total"`
	TrialPerEndpoint int64 `json:"trial_per_endpoint"`
	// LifetimeQuota is requests for the key's whole life (sandbox), never reset.
	LifetimeQuota int64 `json:"lifetime_quota"`
	// WSConnections is the cap on concurrent WebSocket connections per key.
	WSConnections int `json:"ws_connections"`
	// Exports: the plan includes the bulk Parquet exports
	// (GET /v1/{game}/exports and /exports/{table}).
	Exports bool `json:"exports"`
}

// DefaultPlans are the spec's values.
func DefaultPlans() map[string]PlanLimits {
	return map[string]PlanLimits{
		PlanStandard: {Burst: 100, Rate: 20, MonthlyQuota: 20000, WSConnections: 5},
		PlanData:     {Burst: 100, Rate: 20, MonthlyQuota: 20000, WSConnections: 5, Exports: true},
		PlanTrial:    {Burst: 100, Rate: 20, TrialTotal: 5000, TrialPerEndpoint: 1000, WSConnections: 5},
		PlanSandbox:  {Burst: 20, Rate: 5, LifetimeQuota: 2000},
		// Internal keys (load tests, monitoring): generous, still metered.
		PlanInternal: {Burst: 100000, Rate: 100000, MonthlyQuota: 1 << 40, WSConnections: 10000, Exports: true},
	}
}

// Counter is one quota counter: it may be incremented while it stays at or
// under Limit. ExpireAt (zero: never) lets a backend drop it after its window.
type Counter struct {
	Key      string
	Limit    int64
	ExpireAt time.Time
}

// TokenResult is the outcome of taking a bucket token.
type TokenResult struct {
	OK        bool
	Remaining float64       // tokens left after this take
	Wait      time.Duration // until one token is available (when !OK)
}

// ConsumeResult is the outcome of an all-or-nothing quota increment.
type ConsumeResult struct {
	OK     bool
	Failed int     // index of the first counter at its limit (when !OK)
	Values []int64 // values after the call (incremented only when OK)
}

// UsageEvent is one authenticated request, for billing analytics.
type UsageEvent struct {
	Time      time.Time `json:"time"`
	KeyID     string    `json:"key_id"`
	AccountID string    `json:"account_id"`
	Endpoint  string    `json:"endpoint"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
}

// Counters is the backend for buckets, quota counters and usage events.
// Implementations: the embedded store (bbolt, the default) and Redis (for
// several edge instances). One shared test suite runs against both.
type Counters interface {
	TakeToken(ctx context.Context, key string, burst, rate float64, now time.Time) (TokenResult, error)
	Consume(ctx context.Context, now time.Time, cs []Counter) (ConsumeResult, error)
	Get(ctx context.Context, now time.Time, keys []string) ([]int64, error)
	UsageLog
	Close() error
}

// UsageLog is where usage events wait until ExportUsage has written them to
// the store; then they are pruned.
type UsageLog interface {
	// Record logs ev. It may not keep ev's strings past the call without
	// copying them: the edge passes a request id whose memory it reuses
	// for a later request.
	Record(ctx context.Context, ev UsageEvent) error
	// UsageSource identifies the log that positions belong to (see
	// UsageSource); export watermarks are kept per source.
	UsageSource(ctx context.Context) (UsageSource, error)
	// ReadUsage returns up to max events recorded after the position
	// `after` ("" = from the start) and the position of the last one.
	ReadUsage(ctx context.Context, after string, max int) ([]UsageEvent, string, error)
	// ReadUsageRange is ReadUsage bounded by upto (inclusive; "" = none).
	ReadUsageRange(ctx context.Context, after, upto string, max int) ([]UsageEvent, string, error)
	// PruneUsage deletes the events at or before upto (exported ones) and
	// returns how many it deleted.
	PruneUsage(ctx context.Context, upto string) (int64, error)
	// LockExport makes the caller the source's only exporter until the
	// lock is released or its ttl passes without an Extend; it fails with
	// ErrExportBusy while another exporter holds it.
	LockExport(ctx context.Context, ttl time.Duration) (ExportLock, error)
}

// UsageSource identifies one log of usage events: its positions mean
// nothing in another. Every counters database gets a random id when it is
// created (stored in it), a Redis deployment one key created with SETNX
// under the prefix, shared by every edge that uses it. A new counters.db
// (deleted file, new host) or an emptied Redis is a new source, so its
// events are exported from its start instead of being skipped under another
// source's watermark.
type UsageSource struct {
	ID string
	// LegacyUpTo is set when the source already held events before it was
	// given an id (a counters.db or stream written by a version with one
	// store-wide watermark): the last position it held then. The old
	// watermark is adopted for the source only if it is at or before that
	// position; otherwise it cannot be this source's and the source is
	// exported from its start.
	LegacyUpTo string
}

// ErrExportBusy: another exporter holds the source's export lock.
var ErrExportBusy = errors.New("access: another usage export of this source is running")

// ErrExportLockLost: the export lock expired or was taken over; the
// exporter stops before it writes anything more.
var ErrExportLockLost = errors.New("access: usage export lock lost")

// ExportLock is a held export lock.
type ExportLock interface {
	// Extend renews the lock's ttl; ErrExportLockLost when it is no longer
	// held by this exporter.
	Extend(ctx context.Context) error
	Release(ctx context.Context)
}

// AccountLookup resolves an account (trial state).
type AccountLookup interface {
	GetAccount(id string) (Account, error)
}

// Meter applies the plans' limits to requests. Use it by pointer: it keeps
// a cache of each key's counter names.
type Meter struct {
	C        Counters
	Plans    map[string]PlanLimits
	Accounts AccountLookup
	Now      func() time.Time

	// names maps a KeyID to the strings its requests are metered under
	// (*keyNames). A sync.Map, not a map under a read lock: every request
	// reads it, and a read lock's shared counter bounces between cores.
	names sync.Map

	metricsOnce sync.Once
	met         *meterMetrics // the backend calls' latency and errors (Collectors)
}

// keyNames are the names a standard or internal key's requests are metered
// under, built once per key and month instead of per request.
type keyNames struct {
	account string
	bucket  string
	month   time.Time // start of the month the quota counter is for
	next    time.Time // start of the next month (the counter's window ends)
	quota   []Counter // one: the account's counter of that month (read-only)
	reset   string    // X-Quota-Reset: the start of the next month
	fixed   *fixedHeaders
}

// fixedHeaders are the header values of a plan's decisions that are the
// same on every request of a key in a month, rendered once: what
// AppendHeader formats on each request is only what changes.
type fixedHeaders struct {
	burst, rate float64 // the plan limits they were rendered from
	quota       int64
	rateLimit   string // X-RateLimit-Limit
	policy      string // RateLimit-Policy
	quotaLimit  string // X-Quota-Limit
}

func renderFixed(pl PlanLimits) *fixedHeaders {
	f := &fixedHeaders{burst: pl.Burst, rate: pl.Rate, quota: pl.MonthlyQuota}
	d := Decision{HasRate: true, HasQuota: true, RateLimit: pl.Burst, RateWindow: refillSeconds(pl, 0), QuotaLimit: pl.MonthlyQuota}
	var b [64]byte
	v, _ := d.AppendHeader(b[:0], hdrRateLimit)
	f.rateLimit = string(v)
	v, _ = d.AppendHeader(b[:0], hdrPolicy)
	f.policy = string(v)
	v, _ = d.AppendHeader(b[:0], hdrQuotaLimit)
	f.quotaLimit = string(v)
	return f
}

// fits reports whether f was rendered from the limits pl (a plan changed
// under a running meter renders its headers per request until the key's
// names are made again).
func (f *fixedHeaders) fits(pl PlanLimits) bool {
	return f != nil && f.burst == pl.Burst && f.rate == pl.Rate && f.quota == pl.MonthlyQuota
}

// Decision is the metering outcome of one request.
type Decision struct {
	// Code is "" when allowed, else the error code: rate_limited,
	// quota_exceeded, trial_quota_exceeded, trial_endpoint_quota_exceeded,
	// sandbox_quota_exceeded, forbidden (trial ended).
	Code       string
	Message    string
	RetryAfter int // seconds; 0 = no Retry-After

	// The rate-limit headers (when HasRate) and the quota headers (when
	// HasQuota), as numbers: AppendHeader renders them without allocating.
	HasRate        bool
	RateLimit      float64
	RateRemaining  int64
	RateReset      int64 // seconds until the bucket is full again
	RateWindow     int64 // seconds a drained bucket takes to refill
	HasQuota       bool
	QuotaLimit     int64
	QuotaRemaining int64
	QuotaReset     string

	fixed *fixedHeaders // the constant values rendered (nil: AppendHeader formats them)
}

// DecisionHeaders are the response headers a Decision may carry, in the
// order of Decision.AppendHeader's index.
//
// X-RateLimit-Reset and the IETF fields (draft-ietf-httpapi-ratelimit-
// headers) describe the token bucket as a policy named "burst": q tokens
// refilled over w seconds (RateLimit-Policy), r whole tokens left and t
// seconds until the bucket is full again (RateLimit). The monthly quota keeps
// its X-Quota-* headers.
var DecisionHeaders = [...]string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Policy", "RateLimit", "X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset"}

// rateHeaders is how many of DecisionHeaders describe the bucket.
const rateHeaders = 5

// The indexes of DecisionHeaders whose values fixedHeaders holds.
const (
	hdrRateLimit  = 0
	hdrPolicy     = 3
	hdrQuotaLimit = 5
)

// AppendHeader appends the value of header DecisionHeaders[i] to dst, or
// reports false when the decision does not carry it. The caller owns dst,
// so rendering the headers allocates nothing.
func (d *Decision) AppendHeader(dst []byte, i int) ([]byte, bool) {
	switch {
	case i < rateHeaders && !d.HasRate, i >= rateHeaders && !d.HasQuota:
		return dst, false
	}
	if f := d.fixed; f != nil {
		switch i {
		case hdrRateLimit:
			return append(dst, f.rateLimit...), true
		case hdrPolicy:
			return append(dst, f.policy...), true
		case hdrQuotaLimit:
			return append(dst, f.quotaLimit...), true
		}
	}
	switch i {
	case 0:
		return appendNumber(dst, d.RateLimit), true
	case 1:
		return strconv.AppendInt(dst, d.RateRemaining, 10), true
	case 2:
		return strconv.AppendInt(dst, d.RateReset, 10), true
	case 3:
		dst = append(dst, `"burst";q=`...)
		dst = appendNumber(dst, d.RateLimit)
		dst = append(dst, ";w="...)
		return strconv.AppendInt(dst, d.RateWindow, 10), true
	case 4:
		dst = append(dst, `"burst";r=`...)
		dst = strconv.AppendInt(dst, d.RateRemaining, 10)
		dst = append(dst, ";t="...)
		return strconv.AppendInt(dst, d.RateReset, 10), true
	case 5:
		return strconv.AppendInt(dst, d.QuotaLimit, 10), true
	case 6:
		return strconv.AppendInt(dst, d.QuotaRemaining, 10), true
	case 7:
		return append(dst, d.QuotaReset...), true
	}
	return dst, false
}

// appendNumber appends x as strconv.AppendFloat(dst, x, 'f', -1, 64) does,
// through the cheaper integer formatter when x is a whole number (every
// plan's burst is; the float formatter was about half of the headers'
// formatting time in a profile of a metered request).
func appendNumber(dst []byte, x float64) []byte {
	if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
		return strconv.AppendInt(dst, int64(x), 10)
	}
	return strconv.AppendFloat(dst, x, 'f', -1, 64)
}

// Headers returns the decision's headers as name, value pairs (tests,
// logs; the edge uses AppendHeader).
func (d *Decision) Headers() [][2]string {
	var out [][2]string
	for i, name := range DecisionHeaders {
		if v, ok := d.AppendHeader(nil, i); ok {
			out = append(out, [2]string{name, string(v)})
		}
	}
	return out
}

// refillSeconds is how long a bucket holding tokens takes to be full
// again, in whole seconds rounded up.
func refillSeconds(pl PlanLimits, tokens float64) int64 {
	if pl.Rate <= 0 || tokens >= pl.Burst {
		return 0
	}
	return int64(math.Ceil((pl.Burst - tokens) / pl.Rate))
}

// NeverResets is the X-Quota-Reset value of a sandbox key, whose allowance
// is for the key's life.
const NeverResets = "9999-12-31T23:59:59Z"

func startOfNextMonth(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// quotaPlan is the quota shape of one request.
type quotaPlan struct {
	bucket   string
	counters []Counter
	reset    string
	limit    int64 // X-Quota-Limit
	codes    []string
	retryAt  time.Time     // Retry-After of a refusal (zero: none)
	fixed    *fixedHeaders // monthly plans: the constant header values
}

var (
	sandboxCodes = []string{"sandbox_quota_exceeded"}
	trialCodes   = []string{"trial_quota_exceeded", "trial_endpoint_quota_exceeded"}
	monthCodes   = []string{"quota_exceeded"}
)

func (m *Meter) plan(p Principal, endpoint string, now time.Time) (PlanLimits, quotaPlan, *Decision) {
	pl, ok := m.Plans[p.Plan]
	if !ok {
		pl = m.Plans[PlanStandard]
	}
	var q quotaPlan
	switch p.Plan {
	case PlanSandbox:
		q.bucket = "b:" + p.KeyID
		q.counters = []Counter{{Key: "q:sandbox:" + p.KeyID, Limit: pl.LifetimeQuota}}
		q.codes = sandboxCodes
		q.reset = NeverResets
		q.limit = pl.LifetimeQuota
	case PlanTrial:
		var acct Account
		if m.Accounts != nil {
			acct, _ = m.Accounts.GetAccount(p.AccountID)
		}
		if acct.TrialEnds != nil && !now.Before(*acct.TrialEnds) {
			return pl, q, &Decision{Code: "forbidden", Message: "the trial has ended; subscribe to continue"}
		}
		end := now.AddDate(0, 0, 30)
		if acct.TrialEnds != nil {
			end = *acct.TrialEnds
		}
		exp := end.Add(24 * time.Hour)
		q.bucket = "b:" + p.KeyID
		q.counters = []Counter{
			{Key: "q:trial:" + p.AccountID, Limit: pl.TrialTotal, ExpireAt: exp},
			{Key: "q:trialep:" + p.AccountID + ":" + endpoint, Limit: pl.TrialPerEndpoint, ExpireAt: exp},
		}
		q.codes = trialCodes
		q.reset = end.UTC().Format(time.RFC3339)
		q.limit = pl.TrialPerEndpoint
	default:
		kn := m.monthNames(p, pl, now)
		q.bucket, q.counters, q.reset = kn.bucket, kn.quota, kn.reset
		q.codes = monthCodes
		q.retryAt = kn.next
		q.limit = pl.MonthlyQuota
		if kn.fixed.fits(pl) {
			q.fixed = kn.fixed
		}
	}
	return pl, q, nil
}

// monthNames returns the cached names of a monthly-quota key for now's
// month (built on the key's first request of a month, or when its account
// or limit changed).
func (m *Meter) monthNames(p Principal, pl PlanLimits, now time.Time) *keyNames {
	v, _ := m.names.Load(p.KeyID)
	if kn, ok := v.(*keyNames); ok && kn.account == p.AccountID && kn.quota[0].Limit == pl.MonthlyQuota &&
		!now.Before(kn.month) && now.Before(kn.next) {
		return kn
	}
	next := startOfNextMonth(now)
	y, mo, _ := now.UTC().Date()
	kn := &keyNames{
		account: p.AccountID,
		bucket:  "b:" + p.KeyID,
		month:   time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC),
		next:    next,
		quota: []Counter{{Key: "q:month:" + p.AccountID + ":" + now.UTC().Format("2006-01"),
			Limit: pl.MonthlyQuota, ExpireAt: next.Add(24 * time.Hour)}},
		reset: next.Format(time.RFC3339),
		fixed: renderFixed(pl),
	}
	m.names.Store(p.KeyID, kn)
	return kn
}

// remaining is X-Quota-Remaining: requests left in the window (for a trial,
// the tighter of the total and this endpoint's ceiling).
func remaining(cs []Counter, vals []int64) int64 {
	rem := int64(math.MaxInt64)
	for i, c := range cs {
		if r := c.Limit - vals[i]; r < rem {
			rem = r
		}
	}
	if rem < 0 {
		rem = 0
	}
	return rem
}

// Check meters one request: a bucket token, then (when drawQuota) one unit of
// every quota counter of the plan. Precedence: trial ended (403) → bucket
// empty (429 rate_limited, no quota drawn) → quota counters in order (the
// trial total before the per-endpoint ceiling).
func (m *Meter) Check(ctx context.Context, p Principal, endpoint string, drawQuota bool) (Decision, error) {
	var now time.Time
	if m.Now != nil {
		now = m.Now()
	} else {
		now = time.Now()
	}
	pl, q, stop := m.plan(p, endpoint, now)
	if stop != nil {
		return *stop, nil
	}
	d := Decision{}
	t0 := m.startTimer()
	tok, res, err := m.draw(ctx, q.bucket, pl, now, q.counters, drawQuota)
	m.observe(t0, err)
	if err != nil {
		return d, err
	}
	d.HasRate, d.RateLimit, d.RateRemaining = true, pl.Burst, int64(math.Floor(tok.Remaining))
	d.RateReset, d.RateWindow = refillSeconds(pl, tok.Remaining), refillSeconds(pl, 0)
	switch {
	case !tok.OK:
		d.Code, d.Message = "rate_limited", "rate limit exceeded; retry after the Retry-After delay"
		d.RetryAfter = int(math.Ceil(tok.Wait.Seconds()))
		if d.RetryAfter < 1 {
			d.RetryAfter = 1
		}
	case drawQuota && !res.OK:
		d.Code = q.codes[res.Failed]
		d.Message = quotaMessage(d.Code)
		if !q.retryAt.IsZero() {
			d.RetryAfter = int(math.Ceil(q.retryAt.Sub(now).Seconds()))
		}
	}
	d.HasQuota, d.QuotaLimit, d.QuotaRemaining, d.QuotaReset = true, q.limit, remaining(q.counters, res.Values), q.reset
	d.fixed = q.fixed
	return d, nil
}

// SandboxExhausted reports whether a sandbox key's lifetime allowance is
// used up, without drawing anything, and the 429 to answer with. The edge
// asks it before refusing an out-of-sample request with 403 sandbox_scope:
// once the allowance is gone every request of the key gets 429
// sandbox_quota_exceeded, inside the sample or not (SPEC, errors).
func (m *Meter) SandboxExhausted(ctx context.Context, p Principal) (Decision, bool, error) {
	if p.Plan != PlanSandbox {
		return Decision{}, false, nil
	}
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	_, q, _ := m.plan(p, "", now)
	keys := make([]string, len(q.counters))
	for i, c := range q.counters {
		keys[i] = c.Key
	}
	t0 := m.startTimer()
	vals, err := m.C.Get(ctx, now, keys)
	m.observe(t0, err)
	if err != nil {
		return Decision{}, false, fmt.Errorf("access: read quota: %w", err)
	}
	if remaining(q.counters, vals) > 0 {
		return Decision{}, false, nil
	}
	return Decision{Code: q.codes[0], Message: quotaMessage(q.codes[0]),
		HasQuota: true, QuotaLimit: q.limit, QuotaRemaining: 0, QuotaReset: q.reset}, true, nil
}

// TokenAndQuota is implemented by a Counters backend that takes the bucket
// token and draws the quota in one round trip (Redis: one Lua script). The
// semantics are Meter.draw's.
type TokenAndQuota interface {
	TakeAndConsume(ctx context.Context, bucket string, burst, rate float64, now time.Time, cs []Counter, draw bool) (TokenResult, ConsumeResult, error)
}

// draw takes a bucket token and, when the token was granted and drawQuota is
// set, one unit of every counter (all or nothing). The returned
// ConsumeResult's Values are the counters after the call, whether or not
// anything was drawn; its OK is meaningful only when a draw was attempted.
func (m *Meter) draw(ctx context.Context, bucket string, pl PlanLimits, now time.Time, cs []Counter, drawQuota bool) (TokenResult, ConsumeResult, error) {
	if tq, ok := m.C.(TokenAndQuota); ok {
		tok, res, err := tq.TakeAndConsume(ctx, bucket, pl.Burst, pl.Rate, now, cs, drawQuota)
		if err != nil {
			return tok, res, fmt.Errorf("access: meter: %w", err)
		}
		return tok, res, nil
	}
	tok, err := m.C.TakeToken(ctx, bucket, pl.Burst, pl.Rate, now)
	if err != nil {
		return tok, ConsumeResult{}, fmt.Errorf("access: take token: %w", err)
	}
	if tok.OK && drawQuota {
		res, err := m.C.Consume(ctx, now, cs)
		if err != nil {
			return tok, res, fmt.Errorf("access: consume quota: %w", err)
		}
		return tok, res, nil
	}
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = c.Key
	}
	vals, err := m.C.Get(ctx, now, keys)
	if err != nil {
		return tok, ConsumeResult{}, fmt.Errorf("access: read quota: %w", err)
	}
	return tok, ConsumeResult{Values: vals}, nil
}

func quotaMessage(code string) string {
	switch code {
	case "quota_exceeded":
		return "monthly quota used up; it resets at the start of next month (UTC)"
	case "trial_quota_exceeded":
		return "the trial allowance is used up; subscribe to continue"
	case "trial_endpoint_quota_exceeded":
		return "the trial's per-endpoint ceiling is reached for this endpoint"
	case "sandbox_quota_exceeded":
		return "the sandbox key's allowance is used up; it never resets"
	}
	return code
}

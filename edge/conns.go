package edge

import (
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// guardListener keeps the accept loop alive through resource exhaustion.
// fasthttp stops serving (and eo serve exits) on the first accept error that
// is not a timeout, and running out of file descriptors (EMFILE) under a
// flood of idle connections is such an error. Like net/http, this backs off
// (5 ms doubling to 1 s) and accepts again once connections close; it logs
// at most once a minute and counts every failure.
type guardListener struct {
	net.Listener
	log     *slog.Logger
	errs    *atomic.Uint64
	lastLog atomic.Int64 // unix nanoseconds
}

func (l *guardListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || !retryableAccept(err) {
			return c, err
		}
		l.errs.Add(1)
		if now := time.Now().UnixNano(); now-l.lastLog.Load() > int64(time.Minute) {
			l.lastLog.Store(now)
			l.log.Error("accepting connections failed; retrying (raise the open-file limit or lower EO_MAX_CONNS)", "err", err)
		}
		if delay == 0 {
			delay = 5 * time.Millisecond
		} else if delay *= 2; delay > time.Second {
			delay = time.Second
		}
		time.Sleep(delay)
	}
}

// retryableAccept reports an accept failure that passes: out of descriptors
// or memory, or a connection reset before it was accepted.
func retryableAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connLimit is how many connections are served at once when
// Options.MaxConns is zero: the open-file limit (which Go raises to the hard
// limit at start) less a reserve for snapshot files, the counters database,
// Redis and store connections and the accept that sheds one more. A
// connection over the limit is answered 503 and closed at once.
func connLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 10000
	}
	n := int64(rl.Cur)
	if rl.Cur > 1<<20 {
		n = 1 << 20
	}
	n -= 128 + n/20
	if n < 16 {
		n = 16
	}
	return int(n)
}

package proctest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of a server, for the network faults a
// process fault cannot make: a slow link (Rate) and a link that goes
// silent without closing (Blackhole: a failover whose old host vanished,
// a proxy that stops forwarding; reads wait, writes are buffered).
type Proxy struct {
	// Addr is the proxy's address: dial it instead of the server's.
	Addr string
	// Rate, when above 0, is how many bytes a second the client's side
	// sends to the server (set before connections are made).
	Rate int

	silent atomic.Bool
	mu     sync.Mutex
	wake   chan struct{} // closed when the link works again
}

// NewProxy forwards connections made to its Addr to target until the test
// ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), wake: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); p.Restore() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

// Blackhole stops forwarding in both directions, keeping every connection
// open; new connections are accepted and forward nothing either.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.silent.Load() {
		p.wake = make(chan struct{})
		p.silent.Store(true)
	}
}

// Restore forwards again what was held back.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.silent.Swap(false) {
		close(p.wake)
	}
}

// hold waits while the link is silent.
func (p *Proxy) hold() {
	if !p.silent.Load() {
		return
	}
	p.mu.Lock()
	w := p.wake
	p.mu.Unlock()
	<-w
}

func (p *Proxy) serve(c net.Conn, target string) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { p.copy(c, s, 0); c.Close() }()
	p.copy(s, c, p.Rate)
}

// copy forwards src to dst, at most rate bytes a second (0: no limit).
func (p *Proxy) copy(dst, src net.Conn, rate int) {
	buf := make([]byte, 16<<10)
	for {
		p.hold()
		k, err := src.Read(buf)
		if k > 0 {
			if rate > 0 {
				time.Sleep(time.Duration(k) * time.Second / time.Duration(rate))
			}
			p.hold()
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

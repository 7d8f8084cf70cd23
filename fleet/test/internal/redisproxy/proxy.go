// Package redisproxy is a TCP proxy for tests: it forwards to a Redis
// server and can go down, come back on the same address, delay traffic,
// hold it (a Redis frozen, as by SIGSTOP, whose kernel still accepts
// connections), garble an answer, lose one, refuse a command, or hold
// some answers back, to show what fleet mode does when Redis fails, is
// slow, does not answer, answers nonsense, refuses, or answers late or
// not at all after it ran a command.
package redisproxy

import (
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections from its address to a target address. Its
// knobs (SetDelay, Garble, DropAnswer, DropAnswerTo, DropCommandTo, RefuseNext, RefuseNextMatching,
// SlowAnswers, Freeze,
// Thaw, Down, Close) take its lock, and may be called from any goroutine
// while it forwards; Up is for one goroutine, after Down. The zero Proxy
// has no target and no address, and forwards nothing: make one with
// Start.
type Proxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	delay  time.Duration
	gate   chan struct{}     // open while frozen; closed (or nil) lets data through
	garble int               // answers still to garble
	junk   uint64            // the state of the garbage's generator
	drop   bool              // lose the next answer, closing its connection
	refuse []byte            // the answer to the next command, which Redis does not get; nil for none
	refIf  func([]byte) bool // the commands refuse is for; nil for any
	dropIf func([]byte) bool // lose the answer to the next command it picks; nil for none
	lose   func([]byte) bool // lose the next command it picks, closing its connection; nil for none
	slow   func([]byte) bool
	slowD  time.Duration
}

// Start listens on a free port of 127.0.0.1 and forwards to target.
func Start(target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// SetDelay delays every chunk of data, each way, by d.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Garble replaces the next n chunks of data Redis sends (answers, as they
// arrive) with as many bytes of garbage each; 0 garbles none.
func (p *Proxy) Garble(n int) {
	p.mu.Lock()
	p.garble = n
	p.mu.Unlock()
}

// DropAnswer loses the next chunk of data Redis sends (an answer, after
// Redis ran the command) and closes that connection, as a reset connection
// does.
func (p *Proxy) DropAnswer() {
	p.mu.Lock()
	p.drop = true
	p.mu.Unlock()
}

// DropAnswerTo loses the answer to the next chunk of data a client sends
// (a command) for which match returns true, after Redis ran it, and
// closes that connection, as a reset connection does; the answers to the
// commands before it go through.
func (p *Proxy) DropAnswerTo(match func(command []byte) bool) {
	p.mu.Lock()
	p.dropIf = match
	p.mu.Unlock()
}

// DropCommandTo loses the next chunk of data a client sends (a command)
// for which match returns true, before Redis gets it, and closes that
// connection: the client sent it, and sees its connection reset with no
// answer, as when Redis ran it and the answer was lost, but Redis did not
// run it.
func (p *Proxy) DropCommandTo(match func(command []byte) bool) {
	p.mu.Lock()
	p.lose = match
	p.mu.Unlock()
}

// RefuseNext answers the next chunk of data a client sends (a command)
// with answer, such as an error reply ("-ERR ...\r\n"), in Redis's
// place: Redis does not get it, as when Redis refuses a command.
func (p *Proxy) RefuseNext(answer []byte) {
	p.mu.Lock()
	p.refuse, p.refIf = answer, nil
	p.mu.Unlock()
}

// RefuseNextMatching answers the next chunk of data a client sends (a
// command) for which match returns true with answer, which Redis does not
// get; the chunks before it go through.
func (p *Proxy) RefuseNextMatching(match func(command []byte) bool, answer []byte) {
	p.mu.Lock()
	p.refuse, p.refIf = answer, match
	p.mu.Unlock()
}

// SlowAnswers delays by d each chunk of data Redis sends for which match
// reports true (answers of a kind, by their first bytes); nil matches none.
func (p *Proxy) SlowAnswers(match func(answer []byte) bool, d time.Duration) {
	p.mu.Lock()
	p.slow, p.slowD = match, d
	p.mu.Unlock()
}

// Freeze holds every byte, each way, until Thaw: connections stay open and
// new ones are accepted, but nothing is answered.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
	p.mu.Unlock()
}

// Thaw lets the held data and all later data through.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.mu.Unlock()
}

// Down closes the listener and every connection: clients see Redis die.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// Up listens again on the same address.
func (p *Proxy) Up() error {
	var ln net.Listener
	var err error
	for range 50 { // the port may linger for a moment
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close stops the proxy.
func (p *Proxy) Close() {
	p.Thaw()
	p.Down()
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) handle(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c) || !p.track(up) {
		c.Close()
		up.Close()
		return
	}
	var drop bool // the next answer on this connection is lost (dropIf); p.mu guards it
	go p.pipe(up, c, false, &drop)
	p.pipe(c, up, true, &drop)
}

// pipe copies from src to dst; answers is set for the copy of Redis's
// answers to the client. drop is the connection's: its next answer is
// lost.
func (p *Proxy) pipe(dst, src net.Conn, answers bool, drop *bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d, gate := p.delay, p.gate
			if answers && (p.drop || *drop) {
				p.drop, *drop = false, false
				p.mu.Unlock()
				return // the answer is lost: the deferred closes reset the connection
			}
			if !answers && p.lose != nil && p.lose(buf[:n]) {
				p.lose = nil
				p.mu.Unlock()
				return // the command is lost: the deferred closes reset the connection
			}
			if !answers && p.dropIf != nil && p.dropIf(buf[:n]) {
				p.dropIf, *drop = nil, true
			}
			if refuse := p.refuse; !answers && refuse != nil && (p.refIf == nil || p.refIf(buf[:n])) {
				p.refuse, p.refIf = nil, nil
				p.mu.Unlock()
				if _, werr := src.Write(refuse); werr != nil || err != nil {
					return
				}
				continue
			}
			if answers && p.slow != nil && p.slow(buf[:n]) {
				d += p.slowD
			}
			if answers && p.garble > 0 {
				p.garble--
				for i := range buf[:n] {
					p.junk = p.junk*6364136223846793005 + 1442695040888963407
					buf[i] = byte(p.junk >> 56)
				}
			}
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

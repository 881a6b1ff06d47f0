package kafkabroker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The guard (issue 18): the embedded broker is for development and has no
// authentication of its own, yet one of its topics is the log of record of
// API credentials (switchback.principals): any local process could produce
// an admin principal onto it. Protected topics are therefore written only
// by trusted connections, and trust is decided by the kernel rather than
// by a secret: the other end of a loopback connection is a socket whose
// inode and owner /proc/net/tcp tells, and a socket of this very process
// is one of /proc/self/fd.
//
//   - TrustProcess (switchback run): only the process's own connections
//     may write. Its tiers are in it; another process, even of the same
//     user, is refused.
//   - TrustUser (switchback broker, the tiers apart on one machine): the
//     connections of processes of the broker's own user.
//
// A refused Produce is answered TOPIC_AUTHORIZATION_FAILED for each of its
// partitions (a Kafka client fails at once, as against an ACL); a refused
// admin request on a protected topic (delete records or the topic, alter
// its configs or partitions) closes the connection. Every other request
// passes through untouched, in order. It needs /proc (Linux); elsewhere the
// broker starts unguarded and logs a warning.

// Trust says which connections may write the protected topics.
type Trust int

// Trust levels.
const (
	TrustProcess Trust = iota // this process only
	TrustUser                 // processes of this user
)

// guard holds the protected topics and the trust level.
type guard struct {
	topics [][]byte
	trust  Trust
	uid    int
	self   string // "/proc/self/fd"
	net    []string
}

func newGuard(topics []string, trust Trust) (*guard, error) {
	g := &guard{trust: trust, uid: os.Getuid(), self: "/proc/self/fd", net: []string{"/proc/net/tcp", "/proc/net/tcp6"}}
	for _, t := range topics {
		g.topics = append(g.topics, []byte(t))
	}
	if _, err := os.Stat(g.net[0]); err != nil {
		return nil, fmt.Errorf("protected topics need /proc/net/tcp (Linux) to tell who is connected: %w", err)
	}
	return g, nil
}

// listener wraps the broker's listener so that every connection is guarded.
type guardedListener struct {
	net.Listener
	g *guard
}

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, g: l.g, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// maxFrame bounds a request the guard reads whole (kfake's own limit on a
// request is of the same order).
const maxFrame = 256 << 20

// guardedConn sits between a client and kfake: requests are read a frame
// at a time and inspected before kfake sees them; responses are passed
// on in request order, with the guard's own refusals in their places.
type guardedConn struct {
	net.Conn
	g *guard
	r *bufio.Reader

	ready []byte // the inspected frame kfake reads next
	buf   []byte // reused for frames up to reuseFrame bytes (ready is read whole before the next frame)

	mu       sync.Mutex
	order    []*[]byte // one entry per request awaiting its answer: nil is kfake's, else the guard's refusal
	partial  []byte    // a response frame kfake has not finished writing
	trusted  int       // 0 unknown, 1 yes, -1 no
	writeErr error
}

func (c *guardedConn) Read(p []byte) (int, error) {
	for len(c.ready) == 0 {
		frame, err := c.readFrame()
		if err != nil {
			return 0, err
		}
		forward, refusal, err := c.inspect(frame)
		if err != nil {
			_ = c.Conn.Close()
			return 0, err
		}
		if forward {
			c.ready = frame
			break
		}
		if refusal != nil {
			c.queueRefusal(refusal)
		}
	}
	n := copy(p, c.ready)
	c.ready = c.ready[n:]
	return n, nil
}

func (c *guardedConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("kafka request of %d bytes", n)
	}
	var frame []byte
	if need := 4 + int(n); need <= reuseFrame {
		if cap(c.buf) < need {
			c.buf = make([]byte, need, max(need, 4<<10))
		}
		frame = c.buf[:need]
	} else {
		frame = make([]byte, need) // rare and large: not kept
	}
	copy(frame, size[:])
	if _, err := io.ReadFull(c.r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// reuseFrame is the largest request frame read into the connection's
// reused buffer: the embedded broker's hot path (produce and fetch
// requests of a few KB) then allocates nothing per request, and a rare
// large one does not pin its size for the connection's life.
const reuseFrame = 1 << 20

// errRefused closes a connection that sent a refused admin request.
var errRefused = errors.New("kafkabroker: a protected topic may only be changed by a trusted client")

// inspect decides a request's fate: forward it to kfake (noting whether
// kfake will answer), answer it with a refusal, or close the connection.
func (c *guardedConn) inspect(frame []byte) (forward bool, refusal []byte, err error) {
	body := frame[4:]
	if len(body) < 8 {
		c.expect(true)
		return true, nil, nil
	}
	key := int16(binary.BigEndian.Uint16(body[0:2]))
	switch kmsg.Key(key) {
	case kmsg.Produce:
		return c.inspectProduce(body)
	case kmsg.DeleteTopics, kmsg.DeleteRecords, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.CreatePartitions:
		if c.mentionsProtected(body) && !c.isTrusted() {
			return false, nil, errRefused
		}
	}
	c.expect(true)
	return true, nil, nil
}

func (c *guardedConn) mentionsProtected(body []byte) bool {
	for _, t := range c.g.topics {
		if bytes.Contains(body, t) {
			return true
		}
	}
	return false
}

// inspectProduce decodes a Produce request: one to a protected topic from
// an untrusted client is answered TOPIC_AUTHORIZATION_FAILED; acks=0
// requests get no answer, from kfake or from the guard.
func (c *guardedConn) inspectProduce(body []byte) (bool, []byte, error) {
	version := int16(binary.BigEndian.Uint16(body[2:4]))
	corr := body[4:8]
	req := &kmsg.ProduceRequest{Version: version}
	rest, err := skipRequestHeader(body, req.IsFlexible())
	if err == nil {
		err = req.ReadFrom(rest)
	}
	if err != nil {
		// Not decodable: kfake will refuse it; forward as it is.
		c.expect(true)
		return true, nil, nil
	}
	answered := req.Acks != 0
	protected := false
	for _, t := range req.Topics {
		for _, p := range c.g.topics {
			if t.Topic == string(p) {
				protected = true
			}
		}
	}
	if !protected || c.isTrusted() {
		c.expect(answered)
		return true, nil, nil
	}
	if !answered {
		return false, nil, nil
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			msg := "the principals topic of the embedded broker is written by switchback itself only"
			rp.ErrorMessage = &msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	out := make([]byte, 4, 64)
	out = append(out, corr...)
	if resp.IsFlexible() {
		out = append(out, 0) // no tagged fields in the response header
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return false, out, nil
}

// skipRequestHeader returns the body after the request header: api key,
// version, correlation id, client id, and the tagged fields of a flexible
// request.
func skipRequestHeader(b []byte, flexible bool) ([]byte, error) {
	if len(b) < 10 {
		return nil, io.ErrUnexpectedEOF
	}
	n := int16(binary.BigEndian.Uint16(b[8:10]))
	b = b[10:]
	if n > 0 {
		if len(b) < int(n) {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[n:]
	}
	if !flexible {
		return b, nil
	}
	tags, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, io.ErrUnexpectedEOF
	}
	b = b[k:]
	for range tags {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// expect notes a forwarded request that kfake will answer (answered) or
// not (acks=0 produce).
func (c *guardedConn) expect(answered bool) {
	if !answered {
		return
	}
	c.mu.Lock()
	c.order = append(c.order, nil)
	c.mu.Unlock()
}

// queueRefusal answers a refused request in its place: at once when no
// answer of kfake is due before it, else after them (Write).
func (c *guardedConn) queueRefusal(r []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.order) == 0 {
		if _, err := c.Conn.Write(r); err != nil && c.writeErr == nil {
			c.writeErr = err
		}
		return
	}
	c.order = append(c.order, &r)
}

// Write passes kfake's responses on, a frame at a time, each followed by
// the refusals queued behind it.
func (c *guardedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writeErr != nil {
		return 0, c.writeErr
	}
	// kfake writes a response whole as a rule: its frames are passed on
	// from p without a copy; only an unfinished tail is kept.
	buf := p
	if len(c.partial) > 0 {
		buf = append(c.partial, p...)
	}
	for len(buf) >= 4 {
		n := 4 + int(binary.BigEndian.Uint32(buf[:4]))
		if len(buf) < n {
			break
		}
		if _, err := c.Conn.Write(buf[:n]); err != nil {
			c.writeErr = err
			return 0, err
		}
		buf = buf[n:]
		if len(c.order) > 0 {
			c.order = c.order[1:] // kfake's answer, the oldest due
		}
		for len(c.order) > 0 && c.order[0] != nil {
			if _, err := c.Conn.Write(*c.order[0]); err != nil {
				c.writeErr = err
				return 0, err
			}
			c.order = c.order[1:]
		}
	}
	c.partial = nil
	if len(buf) > 0 {
		c.partial = append([]byte(nil), buf...) // p is the caller's
	}
	return len(p), nil
}

// isTrusted decides once per connection, on its first protected request.
func (c *guardedConn) isTrusted() bool {
	c.mu.Lock()
	t := c.trusted
	c.mu.Unlock()
	if t == 0 {
		t = -1
		if c.g.trusts(c.Conn.RemoteAddr(), c.Conn.LocalAddr()) {
			t = 1
		}
		c.mu.Lock()
		c.trusted = t
		c.mu.Unlock()
	}
	return t == 1
}

// trusts finds the client's socket (local address peer, remote address
// ours) in /proc/net/tcp{,6} and judges its owner.
func (g *guard) trusts(peer, ours net.Addr) bool {
	pa, err1 := netip.ParseAddrPort(peer.String())
	oa, err2 := netip.ParseAddrPort(ours.String())
	if err1 != nil || err2 != nil {
		return false
	}
	for _, file := range g.net {
		inode, uid, ok := findSocket(file, pa, oa)
		if !ok {
			continue
		}
		switch g.trust {
		case TrustUser:
			return uid == g.uid
		default:
			return g.ownsSocket(inode)
		}
	}
	return false
}

// findSocket reads a /proc/net/tcp table for the socket whose local end is
// local and remote end remote: its inode and owner uid.
func findSocket(file string, local, remote netip.AddrPort) (inode string, uid int, ok bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[0] == "sl" {
			continue
		}
		l, err1 := parseProcAddr(fields[1])
		r, err2 := parseProcAddr(fields[2])
		if err1 != nil || err2 != nil || !sameEnd(l, local) || !sameEnd(r, remote) {
			continue
		}
		u, err := strconv.Atoi(fields[7])
		if err != nil {
			return "", 0, false
		}
		return fields[9], u, true
	}
	return "", 0, false
}

func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// parseProcAddr reads "0100007F:DA01": the address as the kernel stores
// it (32-bit words in host order, little-endian here) and the port.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	raw := make([]byte, len(hexAddr)/2)
	for i := range raw {
		v, err := strconv.ParseUint(hexAddr[2*i:2*i+2], 16, 8)
		if err != nil {
			return netip.AddrPort{}, err
		}
		raw[i] = byte(v)
	}
	for i := 0; i+4 <= len(raw); i += 4 { // each 32-bit word is little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, ok := netip.AddrFromSlice(raw)
	if !ok {
		return netip.AddrPort{}, errors.New("bad address")
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// ownsSocket reports whether this process holds the socket inode.
func (g *guard) ownsSocket(inode string) bool {
	entries, err := os.ReadDir(g.self)
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join(g.self, e.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}

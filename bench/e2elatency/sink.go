package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// sink is the subscriber: a fasthttp server that answers 200 at once and
// records, per rate, when each availability webhook arrived, every
// delivery id it saw (duplicates are counted) and whether the signature
// checks out. The signature is checked as spec doc 1 tells a subscriber
// to, written here from the spec text, not with the project's code.
type sink struct {
	key []byte // the rule's securityKey

	failing atomic.Bool // answer 503 (a subscriber outage)

	mu        sync.Mutex
	arrived   map[string][]time.Time
	ids       map[string]int
	total     atomic.Int64
	dups      atomic.Int64
	badSig    atomic.Int64
	refused   atomic.Int64 // answered 503 while failing
	malformed atomic.Int64

	srv *fasthttp.Server
	ln  net.Listener
}

func newSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{arrived: map[string][]time.Time{}, ids: map[string]int{}, ln: ln}
	s.srv = &fasthttp.Server{Handler: s.handle, Concurrency: 1 << 16, ReadTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) url() string { return "http://" + s.ln.Addr().String() + "/availability" }

func (s *sink) close() { _ = s.srv.Shutdown() }

var sigField = []byte(`"signature":`)

func (s *sink) handle(c *fasthttp.RequestCtx) {
	now := time.Now()
	if s.failing.Load() {
		s.refused.Add(1)
		c.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	body := c.PostBody()
	var msg struct {
		RateID    string `json:"rateID"`
		Signature struct {
			Sum       string `json:"sum"`
			Timestamp int64  `json:"timestamp"`
			Token     string `json:"token"`
		} `json:"signature"`
	}
	if !bytes.Contains(body, sigField) || json.Unmarshal(body, &msg) != nil || msg.RateID == "" {
		s.malformed.Add(1)
		c.SetStatusCode(fasthttp.StatusOK)
		return
	}
	if !s.verify(msg.Signature.Timestamp, msg.Signature.Token, msg.Signature.Sum) {
		s.badSig.Add(1)
	}
	id := string(c.Request.Header.Peek("X-Switchback-Delivery-Id"))
	s.mu.Lock()
	s.ids[id]++
	dup := s.ids[id] > 1
	if !dup {
		s.arrived[msg.RateID] = append(s.arrived[msg.RateID], now)
	}
	s.mu.Unlock()
	if dup {
		s.dups.Add(1)
	} else {
		s.total.Add(1)
	}
	c.SetStatusCode(fasthttp.StatusOK)
}

// verify: HMAC-SHA256 keyed by the securityKey over the decimal timestamp
// immediately followed by the token, lowercase hex (spec doc 1,
// Authentication 1).
func (s *sink) verify(ts int64, token, sum string) bool {
	m := hmac.New(sha256.New, s.key)
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte(token))
	want := hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(sum))
}

// take hands over the arrivals recorded so far and starts afresh (the
// delivery ids are kept: a duplicate across steps is still one).
func (s *sink) take() map[string][]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.arrived
	s.arrived = map[string][]time.Time{}
	s.total.Store(0)
	return out
}

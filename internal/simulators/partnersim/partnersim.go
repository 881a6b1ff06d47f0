// Package partnersim is a simulated partner (spec doc 2, "Partner
// interface (version 1.2)"): GET /suppliers/{s}/products/{p}/availabilities
// with generated inventory for any supplier and product, and holds and
// bookings (transactions.go); configurable latency, error rate and change
// rate. Tests, benchmarks and the demo use it; it is not production code.
// It lives under internal/ rather than bench/ because demo mode
// (cmd/switchback/internal/demo) ships it in the binary, and no non-test
// code may import bench/; bench/partnersim/cmd/partnersim serves it alone.
//
// Inventory: every rate has windows of SlotLength starting at the hours of
// SlotHours of every day. A window's capacity is a hash of (supplier,
// product, rate, window start) and of the change epoch: every ChangeEvery,
// a fraction ChangeRate of the windows take a new capacity, so repeated
// reads see the capacities move over time.
package partnersim

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// RatesPerProduct: rate ids are "<product>-r1".."<product>-rN"
	// unless Rates names them. Default 2.
	RatesPerProduct int
	// Rates overrides the rate ids, by product id.
	Rates map[string][]string
	// SlotHours are the start hours (UTC) of the windows of a day.
	// Default 9, 13, 17.
	SlotHours []int
	// SlotLength of a window. Default 2 h.
	SlotLength time.Duration
	// MaxCapacity of a window. Default 20.
	MaxCapacity int
	// Latency added to every answer.
	Latency time.Duration
	// ErrorRate is the fraction of calls answered 500.
	ErrorRate float64
	// ChangeRate is the fraction of windows whose capacity changes every
	// ChangeEvery (default 1 min).
	ChangeRate  float64
	ChangeEvery time.Duration
	// ExpiresIn is how long the answer may be used (expires = now + it).
	// Default 10 min.
	ExpiresIn time.Duration
	// APIKey and APISecret, when set, are required (else 401).
	APIKey, APISecret string
	// Clock. Default time.Now.
	Clock func() time.Time
	// Seed of the generated inventory.
	Seed uint64
	// TxConfig: holds and bookings (transactions.go).
	TxConfig
}

// Server is the simulated partner; it is an http.Handler.
type Server struct {
	mu    sync.RWMutex
	cfg   Config
	calls atomic.Int64
	rnd   *rand.Rand
	rndMu sync.Mutex
	tx    txState
}

// New returns a server.
func New(cfg Config) *Server {
	if cfg.RatesPerProduct <= 0 {
		cfg.RatesPerProduct = 2
	}
	if len(cfg.SlotHours) == 0 {
		cfg.SlotHours = []int{9, 13, 17}
	}
	if cfg.SlotLength <= 0 {
		cfg.SlotLength = 2 * time.Hour
	}
	if cfg.MaxCapacity <= 0 {
		cfg.MaxCapacity = 20
	}
	if cfg.ChangeEvery <= 0 {
		cfg.ChangeEvery = time.Minute
	}
	if cfg.ExpiresIn <= 0 {
		cfg.ExpiresIn = 10 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Server{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 7))}
	s.tx.holds, s.tx.bookings = map[string]*schemas.Hold{}, map[string]*simBooking{}
	return s
}

// Calls is the number of availabilities calls answered (any status).
func (s *Server) Calls() int64 { return s.calls.Load() }

// Update changes the configuration at run time (latency, error rate…).
func (s *Server) Update(f func(*Config)) {
	s.mu.Lock()
	f(&s.cfg)
	s.mu.Unlock()
}

// Window is one generated availability window (the partner wire shape).
type Window struct {
	ID          string    `json:"id"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Capacity    int       `json:"capacity"`
	MaxCapacity int       `json:"maxCapacity"`
}

type list struct {
	Availability []Window `json:"availability"`
}

type errorBody struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Meta    map[string]string `json:"meta"`
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	cfg := s.cfg
	s.mu.RUnlock()
	reqID := r.Header.Get("X-Request-ID")
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(errorBody{Code: code, Message: msg, Meta: map[string]string{"reqId": reqID}})
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if parts[0] == "holds" || parts[0] == "bookings" {
		s.serveTx(w, r, cfg, parts)
		return
	}
	if r.Method != http.MethodGet || len(parts) != 5 || parts[0] != "suppliers" || parts[2] != "products" || parts[4] != "availabilities" {
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	s.calls.Add(1)
	if cfg.Latency > 0 {
		select {
		case <-time.After(cfg.Latency):
		case <-r.Context().Done():
			return
		}
	}
	if cfg.APIKey != "" && (r.Header.Get("X-API-Key") != cfg.APIKey || r.Header.Get("X-API-Secret") != cfg.APISecret) {
		fail(http.StatusUnauthorized, "UNAUTHORIZED", "bad credentials")
		return
	}
	if cfg.ErrorRate > 0 {
		s.rndMu.Lock()
		x := s.rnd.Float64()
		s.rndMu.Unlock()
		if x < cfg.ErrorRate {
			fail(http.StatusInternalServerError, "INTERNAL", "simulated failure")
			return
		}
	}
	sid, pid := parts[1], parts[3]
	q := r.URL.Query()
	start, err1 := time.Parse(time.RFC3339, q.Get("start"))
	end, err2 := time.Parse(time.RFC3339, q.Get("end"))
	if err1 != nil || err2 != nil || !start.Before(end) {
		fail(http.StatusBadRequest, "BAD_REQUEST", "start and end must be RFC 3339, start before end")
		return
	}
	rates := cfg.Rates[pid]
	if rates == nil {
		for i := 1; i <= cfg.RatesPerProduct; i++ {
			rates = append(rates, pid+"-r"+string(rune('0'+i%10)))
		}
	}
	if rid := q.Get("rate_id"); rid != "" {
		found := false
		for _, r := range rates {
			found = found || r == rid
		}
		if !found {
			rates = nil
		} else {
			rates = []string{rid}
		}
	}
	now := cfg.Clock()
	byRate := make(map[string]list, len(rates))
	for _, rid := range rates {
		byRate[rid] = list{Availability: Windows(cfg, sid, pid, rid, start, end, now)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"availabilities": map[string]any{
			"byRate":    byRate,
			"productId": pid,
			"retrieved": now.UTC().Format(time.RFC3339Nano),
			"expires":   now.Add(cfg.ExpiresIn).UTC().Format(time.RFC3339Nano),
		},
		"meta": map[string]string{"reqId": reqID},
	})
}

// Windows is the generated inventory of a rate that overlaps [start, end)
// at now.
func Windows(cfg Config, sid, pid, rid string, start, end, now time.Time) []Window {
	out := []Window{}
	day := start.UTC().Truncate(24 * time.Hour)
	epoch := now.UnixNano() / int64(cfg.ChangeEvery)
	for ; day.Before(end); day = day.Add(24 * time.Hour) {
		for _, h := range cfg.SlotHours {
			ws := day.Add(time.Duration(h) * time.Hour)
			we := ws.Add(cfg.SlotLength)
			if !ws.Before(end) || !we.After(start) {
				continue
			}
			base := hash(cfg.Seed, sid, pid, rid, ws.Unix(), 0)
			c := int(base % uint64(cfg.MaxCapacity+1))
			if cfg.ChangeRate > 0 {
				ch := hash(cfg.Seed, sid, pid, rid, ws.Unix(), epoch)
				if float64(ch%10000)/10000 < cfg.ChangeRate {
					c = int((ch >> 16) % uint64(cfg.MaxCapacity+1))
				}
			}
			id := hash(cfg.Seed, sid, pid, rid, ws.Unix(), -1)
			out = append(out, Window{ID: idString(id), Start: ws, End: we, Capacity: c, MaxCapacity: cfg.MaxCapacity})
		}
	}
	return out
}

func hash(seed uint64, sid, pid, rid string, t, epoch int64) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	binary.LittleEndian.PutUint64(b[16:], uint64(epoch))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(sid + "\x00" + pid + "\x00" + rid))
	return h.Sum64()
}

// idString renders a stable UUID-shaped id.
func idString(x uint64) string {
	const hex = "0123456789abcdef"
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x)
	binary.BigEndian.PutUint64(b[8:], x*0x9e3779b97f4a7c15)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

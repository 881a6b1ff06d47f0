package partnersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// Holds and bookings of the simulated partner (spec doc 2, partner table):
// POST /holds, GET and DELETE /holds/{id}, POST /bookings, GET
// /bookings/{id}, PUT /bookings/cancel/{id}. State is in memory.
//
//   - A hold is ACTIVE for HoldTTL, then expired (a booking on it is 409).
//   - A booking needs an ACTIVE, unexpired hold (409 otherwise) and takes
//     the id the caller gave: a second POST with a known id answers the
//     booking already made (the partner side of idempotent retries).
//   - With AcceptBookings, a booking is answered 202 with status PENDING
//     and no tickets; its tickets appear TicketsAfter later (seen by GET).
//     Without it, 201 with status OPEN and one ticket per item.
//   - Cancel moves a booking to CANCELLED (204); CancelBooking does the
//     same from the partner's side, for "discovered from the partner".

// TxConfig configures the hold and booking behaviour (part of Config).
type TxConfig struct {
	// HoldTTL is how long a hold stays usable. Default 15 min.
	HoldTTL time.Duration
	// AcceptBookings answers bookings 202 (tickets later).
	AcceptBookings bool
	// TicketsAfter is when the tickets of an accepted booking appear.
	TicketsAfter time.Duration
}

type txState struct {
	mu       sync.Mutex
	holds    map[string]*schemas.Hold
	bookings map[string]*simBooking
	seq      atomic.Int64
	creates  atomic.Int64 // bookings created (not replays)
	txCalls  atomic.Int64
}

type simBooking struct {
	b        schemas.Booking
	accepted bool
	ticketAt time.Time
}

// BookingsCreated is the number of distinct bookings the partner made
// (replays of a known id do not count).
func (s *Server) BookingsCreated() int64 { return s.tx.creates.Load() }

// TxCalls is the number of hold and booking calls answered (any status).
func (s *Server) TxCalls() int64 { return s.tx.txCalls.Load() }

// Booking returns the partner's copy of a booking.
func (s *Server) Booking(id string) (schemas.Booking, bool) {
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	sb, ok := s.tx.bookings[id]
	if !ok {
		return schemas.Booking{}, false
	}
	return sb.b, true
}

// CancelBooking cancels a booking on the partner's side (the supplier
// cancelled it): Switchback discovers it when it next reads the booking.
func (s *Server) CancelBooking(id string) bool {
	s.mu.RLock()
	now := s.cfg.Clock()
	s.mu.RUnlock()
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	sb, ok := s.tx.bookings[id]
	if !ok {
		return false
	}
	if sb.b.Status != schemas.BookingCancelled {
		sb.b.Status = schemas.BookingCancelled
		sb.b.Timeline = append(sb.b.Timeline, schemas.TimelineEntry{Timestamp: now.UTC(), TypeOf: schemas.BookingCancelled})
	}
	return true
}

func (s *Server) serveTx(w http.ResponseWriter, r *http.Request, cfg Config, parts []string) {
	reqID := r.Header.Get("X-Request-ID")
	s.tx.txCalls.Add(1)
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(errorBody{Code: code, Message: msg, Meta: map[string]string{"reqId": reqID}})
	}
	answer := func(status int, key string, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{key: v, "meta": map[string]string{"reqId": reqID}})
	}
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
	now := cfg.Clock().UTC()
	holdTTL := cfg.HoldTTL
	if holdTTL <= 0 {
		holdTTL = 15 * time.Minute
	}
	t := &s.tx
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case parts[0] == "holds" && len(parts) == 1 && r.Method == http.MethodPost:
		var in struct {
			Hold *schemas.Hold `json:"hold"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Hold == nil || len(in.Hold.Items) == 0 {
			fail(http.StatusBadRequest, "BAD_REQUEST", "a hold with items is required")
			return
		}
		h := *in.Hold
		for _, it := range h.Items {
			if it.Quantity < 1 || it.RateID == "" || it.ProductID == "" {
				fail(http.StatusBadRequest, "BAD_REQUEST", "every item needs productId, rateId and a quantity")
				return
			}
		}
		if h.ID == "" {
			h.ID = fmt.Sprintf("sim-hold-%d", t.seq.Add(1))
		}
		if old, ok := t.holds[h.ID]; ok {
			answer(http.StatusCreated, "hold", old)
			return
		}
		h.Status, h.Expires, h.Retrieved = schemas.HoldActive, now.Add(holdTTL), now
		h.Timeline = []schemas.TimelineEntry{{Timestamp: now, TypeOf: schemas.HoldActive}}
		for i := range h.Items {
			h.Items[i].Rate = json.RawMessage(fmt.Sprintf(`{"id":%q,"productId":%q,"holdable":true,"cancelable":true}`, h.Items[i].RateID, h.Items[i].ProductID))
		}
		t.holds[h.ID] = &h
		answer(http.StatusCreated, "hold", h)
	case parts[0] == "holds" && len(parts) == 2 && r.Method == http.MethodGet:
		h, ok := t.holds[parts[1]]
		if !ok {
			fail(http.StatusNotFound, "NOT_FOUND", "no such hold")
			return
		}
		out := *h
		out.Retrieved = now
		answer(http.StatusOK, "hold", out)
	case parts[0] == "holds" && len(parts) == 2 && r.Method == http.MethodDelete:
		h, ok := t.holds[parts[1]]
		if !ok {
			fail(http.StatusNotFound, "NOT_FOUND", "no such hold")
			return
		}
		if h.Status != schemas.HoldReleased {
			h.Status = schemas.HoldReleased
			h.Timeline = append(h.Timeline, schemas.TimelineEntry{Timestamp: now, TypeOf: schemas.HoldReleased})
		}
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "bookings" && len(parts) == 1 && r.Method == http.MethodPost:
		var in struct {
			Booking *schemas.Booking `json:"booking"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Booking == nil || len(in.Booking.Items) == 0 {
			fail(http.StatusBadRequest, "BAD_REQUEST", "a booking with items is required")
			return
		}
		b := *in.Booking
		if b.ID != "" {
			if old, ok := t.bookings[b.ID]; ok {
				s.settle(old, now)
				answer(bookingStatus(old), "booking", old.b)
				return
			}
		} else {
			b.ID = fmt.Sprintf("sim-booking-%d", t.seq.Add(1))
		}
		h, ok := t.holds[b.HoldID]
		switch {
		case !ok:
			fail(http.StatusConflict, "CONFLICT", "no such hold")
			return
		case h.Status != schemas.HoldActive || !now.Before(h.Expires):
			fail(http.StatusConflict, "CONFLICT", "the hold is not active")
			return
		}
		yes := true
		b.Cancelable = &yes
		for i := range b.Items {
			if b.Items[i].ID == "" {
				b.Items[i].ID = fmt.Sprintf("%s-item-%d", b.ID, i+1)
			}
			b.Items[i].Rate = json.RawMessage(fmt.Sprintf(`{"id":%q,"productId":%q,"cancelable":true}`, b.Items[i].RateID, b.Items[i].ProductID))
		}
		sb := &simBooking{b: b, accepted: cfg.AcceptBookings}
		if cfg.AcceptBookings {
			sb.b.Status = schemas.BookingPending
			sb.ticketAt = now.Add(cfg.TicketsAfter)
		} else {
			sb.b.Status = schemas.BookingOpen
			sb.b.Tickets = tickets(b)
		}
		sb.b.Timeline = []schemas.TimelineEntry{{Timestamp: now, TypeOf: sb.b.Status}}
		t.bookings[b.ID] = sb
		t.creates.Add(1)
		answer(bookingStatus(sb), "booking", sb.b)
	case parts[0] == "bookings" && len(parts) == 2 && r.Method == http.MethodGet:
		sb, ok := t.bookings[parts[1]]
		if !ok {
			fail(http.StatusNotFound, "NOT_FOUND", "no such booking")
			return
		}
		s.settle(sb, now)
		answer(http.StatusOK, "booking", sb.b)
	case parts[0] == "bookings" && len(parts) == 3 && parts[1] == "cancel" && r.Method == http.MethodPut:
		sb, ok := t.bookings[parts[2]]
		if !ok {
			fail(http.StatusNotFound, "NOT_FOUND", "no such booking")
			return
		}
		if sb.b.Status != schemas.BookingCancelled {
			sb.b.Status = schemas.BookingCancelled
			sb.b.Timeline = append(sb.b.Timeline, schemas.TimelineEntry{Timestamp: now, TypeOf: schemas.BookingCancelled})
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
	}
}

// settle attaches the tickets of an accepted booking once due.
func (s *Server) settle(sb *simBooking, now time.Time) {
	if sb.accepted && sb.b.Status == schemas.BookingPending && !now.Before(sb.ticketAt) {
		sb.b.Status = schemas.BookingOpen
		sb.b.Tickets = tickets(sb.b)
		sb.b.Timeline = append(sb.b.Timeline, schemas.TimelineEntry{Timestamp: now, TypeOf: schemas.BookingOpen})
	}
}

func bookingStatus(sb *simBooking) int {
	if sb.accepted {
		return http.StatusAccepted
	}
	return http.StatusCreated
}

// tickets makes one ticket per item, with a QR code barcode.
func tickets(b schemas.Booking) []schemas.Ticket {
	out := make([]schemas.Ticket, 0, len(b.Items))
	for i, it := range b.Items {
		out = append(out, schemas.Ticket{
			Barcode:        json.RawMessage(fmt.Sprintf(`{"format":"QR_CODE","value":"SIM-%s-%d"}`, b.ID, i+1)),
			BookingItemIDs: []string{it.ID},
			Guests:         []schemas.Guest{{Count: max(it.Quantity, 1), TypeCode: "ADULT", TypeName: "Adult"}},
			Status:         schemas.BookingOpen, // valid for redemption (docs/decisions.md: ticket statuses)
		})
	}
	return out
}

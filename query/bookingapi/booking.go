// Package bookingapi maps the reseller's hold and booking requests of spec
// doc 2 ("Reseller flow", version 1.2: POST /holds, GET and DELETE
// /holds/{hold_id}, POST /bookings, GET /bookings/{booking_id}, PUT
// /bookings/cancel/{booking_id}) to internal/booking, which owns the rules.
// Bodies follow the partner interface: {"hold": {...}, "meta": {...}} and
// {"booking": {...}, "meta": {...}} in, {"meta", "hold"} and {"meta",
// "booking"} out. Resellers only (403 for other roles); a reseller sees
// its own channel's holds and bookings only (another's id is 404).
package bookingapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"

	"github.com/switchbackhq/switchback/internal/booking"
)

var resellerOnly = []principals.Role{principals.RoleReseller}

// Path parameters (spec doc 2 spelling).
const (
	pHold    = "hold_id"
	pBooking = "booking_id"
)

// Service is what the handlers need; *internal/booking.Service implements
// it.
type Service interface {
	CreateHold(ctx context.Context, p principals.Principal, reqID string, in schemas.Hold) (schemas.Hold, error)
	Hold(ctx context.Context, p principals.Principal, reqID, id string) (schemas.Hold, error)
	ReleaseHold(ctx context.Context, p principals.Principal, reqID, id string) error
	CreateBooking(ctx context.Context, p principals.Principal, reqID string, in schemas.Booking) (booking.Result, error)
	Booking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error)
	CancelBooking(ctx context.Context, p principals.Principal, reqID, id string) (booking.Result, error)
}

// Register adds the routes under /v1.2 and /v1.3 (the spec does not show
// the v1.3 hold and booking resources: they are the v1.2 ones).
func Register(s *httpapi.Server, svc Service) {
	h := handlers{svc: svc}
	for _, base := range []string{httpapi.BaseResellerV12, httpapi.BaseResellerV13} {
		g := s.Group(base)
		g.Handle(http.MethodPost, "/holds", resellerOnly, h.createHold)
		g.Handle(http.MethodGet, "/holds/{"+pHold+"}", resellerOnly, h.hold)
		g.Handle(http.MethodDelete, "/holds/{"+pHold+"}", resellerOnly, h.releaseHold)
		g.Handle(http.MethodPost, "/bookings", resellerOnly, h.createBooking)
		g.Handle(http.MethodGet, "/bookings/{"+pBooking+"}", resellerOnly, h.booking)
		g.Handle(http.MethodPut, "/bookings/cancel/{"+pBooking+"}", resellerOnly, h.cancelBooking)
	}
}

type handlers struct{ svc Service }

type holdRequest struct {
	Hold *schemas.Hold   `json:"hold"`
	Meta json.RawMessage `json:"meta,omitempty"`
}

// mirror makes the answer's meta.reqId the request body's meta.reqId,
// when it has one (spec doc 2: "on partner responses it must mirror the
// meta.reqId of the request"; these bodies are the partner interface's).
// The rest of meta is free (doc 2 shows meta.data); a reqId that is not a
// string is INVALID_FIELD meta.reqId.
func mirror(r *httpapi.Request, meta json.RawMessage) error {
	if len(meta) == 0 || string(meta) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(meta, &m); err != nil {
		return apierror.Invalid("meta", "must be an object")
	}
	raw, ok := m["reqId"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return apierror.Invalid("meta.reqId", "must be a string")
	}
	r.MirrorReqID(id)
	return nil
}

type holdResponse struct {
	httpapi.Meta `json:"meta"`
	Hold         schemas.Hold `json:"hold"`
}

type bookingRequest struct {
	Booking *schemas.Booking `json:"booking"`
	Meta    json.RawMessage  `json:"meta,omitempty"`
}

type bookingResponse struct {
	httpapi.Meta `json:"meta"`
	Booking      schemas.Booking `json:"booking"`
}

func (h handlers) createHold(r *httpapi.Request) error {
	var in holdRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	if err := mirror(r, in.Meta); err != nil {
		return err
	}
	if in.Hold == nil {
		return apierror.Invalid("hold", "is required")
	}
	got, err := h.svc.CreateHold(r.Context(), r.Principal, r.ID, *in.Hold)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, &holdResponse{Hold: got})
}

func (h handlers) hold(r *httpapi.Request) error {
	got, err := h.svc.Hold(r.Context(), r.Principal, r.ID, r.Param(pHold))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &holdResponse{Hold: got})
}

func (h handlers) releaseHold(r *httpapi.Request) error {
	if err := h.svc.ReleaseHold(r.Context(), r.Principal, r.ID, r.Param(pHold)); err != nil {
		return err
	}
	return r.NoContent()
}

// createBooking answers 201 with the booking, or 202 while the partner
// accepted it and its tickets are to come (a retry answers the same).
func (h handlers) createBooking(r *httpapi.Request) error {
	var in bookingRequest
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	if err := mirror(r, in.Meta); err != nil {
		return err
	}
	if in.Booking == nil {
		return apierror.Invalid("booking", "is required")
	}
	res, err := h.svc.CreateBooking(r.Context(), r.Principal, r.ID, *in.Booking)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Accepted {
		status = http.StatusAccepted
	}
	return r.JSON(status, &bookingResponse{Booking: res.Booking})
}

func (h handlers) booking(r *httpapi.Request) error {
	res, err := h.svc.Booking(r.Context(), r.Principal, r.ID, r.Param(pBooking))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &bookingResponse{Booking: res.Booking})
}

// cancelBooking answers 204 without a body, as spec doc 2 shows the
// cancel (the final state is read with GET /bookings/{booking_id}).
func (h handlers) cancelBooking(r *httpapi.Request) error {
	if _, err := h.svc.CancelBooking(r.Context(), r.Principal, r.ID, r.Param(pBooking)); err != nil {
		return err
	}
	return r.NoContent()
}

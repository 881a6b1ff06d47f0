package partner

import (
	"context"
	"fmt"
	"net/http"

	"github.com/switchbackhq/switchback/schemas"
)

// CreateBooking calls POST /bookings with {booking, meta}. The partner
// answers 201 {booking, meta} with the booking confirmed, or 202 {booking,
// meta} when it accepted the booking and attaches the tickets later (spec
// doc 1, "booking tickets-added"); accepted reports the 202. The request
// carries the booking id, so that a retry after a timeout is the same
// booking at a partner that honours ids (the simulated one does).
func (c *Client) CreateBooking(ctx context.Context, conn Connection, b schemas.Booking, reqID string) (out schemas.Booking, accepted bool, err error) {
	u, err := partnerURL(conn.BaseURL, "bookings")
	if err != nil {
		return out, false, requestError(err)
	}
	body, err := encodeRequest("booking", b, reqID)
	if err != nil {
		return out, false, err
	}
	status, err := c.send(ctx, conn, call{op: "createBooking", method: http.MethodPost, url: u, reqID: reqID, body: body,
		ok: []int{http.StatusCreated, http.StatusAccepted}, parse: func(_ int, b []byte) error { return parseBooking(b, reqID, &out) }})
	return out, status == http.StatusAccepted, err
}

// GetBooking calls GET /bookings/{booking_id}; 404 is ErrNotFound.
func (c *Client) GetBooking(ctx context.Context, conn Connection, id, reqID string) (schemas.Booking, error) {
	u, err := partnerURL(conn.BaseURL, "bookings", id)
	if err != nil {
		return schemas.Booking{}, requestError(err)
	}
	var out schemas.Booking
	_, err = c.send(ctx, conn, call{op: "getBooking", method: http.MethodGet, url: u, reqID: reqID,
		ok: []int{http.StatusOK}, parse: func(_ int, b []byte) error { return parseBooking(b, reqID, &out) }})
	return out, err
}

// CancelBooking calls PUT /bookings/cancel/{booking_id}: 204 with an empty
// body (or 200) is cancelled; 400 is ErrRejected, 404 ErrNotFound.
func (c *Client) CancelBooking(ctx context.Context, conn Connection, id, reqID string) error {
	u, err := partnerURL(conn.BaseURL, "bookings", "cancel", id)
	if err != nil {
		return requestError(err)
	}
	_, err = c.send(ctx, conn, call{op: "cancelBooking", method: http.MethodPut, url: u, reqID: reqID,
		ok: []int{http.StatusNoContent, http.StatusOK}})
	return err
}

func parseBooking(body []byte, reqID string, out *schemas.Booking) error {
	if err := decodeAnswer(body, "booking", reqID, out); err != nil {
		return err
	}
	if out.ID == "" {
		return fmt.Errorf("%w: booking without id", ErrMalformed)
	}
	for i, it := range out.Items {
		if it.Quantity < 0 {
			return fmt.Errorf("%w: booking item %d: negative quantity", ErrMalformed, i)
		}
		out.Items[i].StartTime = it.StartTime.UTC()
	}
	return nil
}

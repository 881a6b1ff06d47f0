package partner

import (
	"context"
	"fmt"
	"net/http"

	"github.com/switchbackhq/switchback/schemas"
)

// CreateHold calls POST /holds with {hold, meta} and reads 201 {hold,
// meta} (spec doc 2, partner table). The answer must carry the hold's id.
func (c *Client) CreateHold(ctx context.Context, conn Connection, h schemas.Hold, reqID string) (schemas.Hold, error) {
	u, err := partnerURL(conn.BaseURL, "holds")
	if err != nil {
		return schemas.Hold{}, requestError(err)
	}
	body, err := encodeRequest("hold", h, reqID)
	if err != nil {
		return schemas.Hold{}, err
	}
	var out schemas.Hold
	_, err = c.send(ctx, conn, call{op: "createHold", method: http.MethodPost, url: u, reqID: reqID, body: body,
		ok: []int{http.StatusCreated}, parse: func(_ int, b []byte) error { return parseHold(b, reqID, &out) }})
	return out, err
}

// GetHold calls GET /holds/{hold_id}; 404 is ErrNotFound.
func (c *Client) GetHold(ctx context.Context, conn Connection, id, reqID string) (schemas.Hold, error) {
	u, err := partnerURL(conn.BaseURL, "holds", id)
	if err != nil {
		return schemas.Hold{}, requestError(err)
	}
	var out schemas.Hold
	_, err = c.send(ctx, conn, call{op: "getHold", method: http.MethodGet, url: u, reqID: reqID,
		ok: []int{http.StatusOK}, parse: func(_ int, b []byte) error { return parseHold(b, reqID, &out) }})
	return out, err
}

// ReleaseHold calls DELETE /holds/{hold_id}: 204 (or 200) is released,
// 404 is ErrNotFound.
func (c *Client) ReleaseHold(ctx context.Context, conn Connection, id, reqID string) error {
	u, err := partnerURL(conn.BaseURL, "holds", id)
	if err != nil {
		return requestError(err)
	}
	_, err = c.send(ctx, conn, call{op: "releaseHold", method: http.MethodDelete, url: u, reqID: reqID,
		ok: []int{http.StatusNoContent, http.StatusOK}})
	return err
}

func parseHold(body []byte, reqID string, out *schemas.Hold) error {
	if err := decodeAnswer(body, "hold", reqID, out); err != nil {
		return err
	}
	if out.ID == "" {
		return fmt.Errorf("%w: hold without id", ErrMalformed)
	}
	for i, it := range out.Items {
		if it.Quantity < 0 {
			return fmt.Errorf("%w: hold item %d: negative quantity", ErrMalformed, i)
		}
	}
	out.Expires, out.Retrieved = out.Expires.UTC(), out.Retrieved.UTC()
	return nil
}

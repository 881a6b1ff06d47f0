package partner

import (
	"context"
	"fmt"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// SupplierCatalog gives a supplier with its connection; *catalogredis.Store
// implements it.
type SupplierCatalog interface {
	Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error)
}

// ErrNotPartner: the supplier is not reached through the partner
// interface, so it takes no holds or bookings from resellers here.
var ErrNotPartner = domainerr.New("BAD_REQUEST", "the supplier does not take holds and bookings through the partner interface")

// Suppliers calls the partner of a supplier by the supplier's id: it looks
// the connection up in the catalog at each call (so a changed connection
// applies at once) and keeps the credentials out of its callers' hands.
// internal/booking uses it through its Partner interface.
type Suppliers struct {
	Client  *Client
	Catalog SupplierCatalog
}

func (s Suppliers) conn(ctx context.Context, sid string) (Connection, error) {
	sup, err := s.Catalog.Supplier(ctx, catalog.SystemScope(), sid)
	if err != nil {
		return Connection{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	if sup.Connection.Kind != catalog.ConnectionPartner {
		return Connection{}, ErrNotPartner
	}
	c := sup.Connection
	return Connection{BaseURL: c.BaseURL, APIKey: c.Credentials.APIKey, APISecret: c.Credentials.APISecret}, nil
}

// CreateHold calls the supplier's partner.
func (s Suppliers) CreateHold(ctx context.Context, sid string, h schemas.Hold, reqID string) (schemas.Hold, error) {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	return s.Client.CreateHold(ctx, conn, h, reqID)
}

// GetHold calls the supplier's partner.
func (s Suppliers) GetHold(ctx context.Context, sid, id, reqID string) (schemas.Hold, error) {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	return s.Client.GetHold(ctx, conn, id, reqID)
}

// ReleaseHold calls the supplier's partner.
func (s Suppliers) ReleaseHold(ctx context.Context, sid, id, reqID string) error {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return err
	}
	return s.Client.ReleaseHold(ctx, conn, id, reqID)
}

// CreateBooking calls the supplier's partner.
func (s Suppliers) CreateBooking(ctx context.Context, sid string, b schemas.Booking, reqID string) (schemas.Booking, bool, error) {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return schemas.Booking{}, false, err
	}
	return s.Client.CreateBooking(ctx, conn, b, reqID)
}

// GetBooking calls the supplier's partner.
func (s Suppliers) GetBooking(ctx context.Context, sid, id, reqID string) (schemas.Booking, error) {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return schemas.Booking{}, err
	}
	return s.Client.GetBooking(ctx, conn, id, reqID)
}

// CancelBooking calls the supplier's partner.
func (s Suppliers) CancelBooking(ctx context.Context, sid, id, reqID string) error {
	conn, err := s.conn(ctx, sid)
	if err != nil {
		return err
	}
	return s.Client.CancelBooking(ctx, conn, id, reqID)
}

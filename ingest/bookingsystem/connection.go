package bookingsystem

import (
	"fmt"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// Dialects of a booking system: how paths and payloads are spoken.
const (
	// DialectV2 is spec doc 3's interface (paths under /suppliers/{id}).
	DialectV2 = "v2"
	// DialectOCTO is the public OCTO standard (supplier-less paths
	// /supplier, /products, /availability, /bookings).
	DialectOCTO = "octo"
)

// ErrNotBookingSystem: the supplier is not reached through a booking
// system (it is a partner supplier, or has no connection).
var ErrNotBookingSystem = domainerr.New("BAD_REQUEST", "the supplier is not connected through a booking system")

// ConnectionFor is the connection to a catalog supplier's booking system:
// its baseUrl is the supplier's endpoint (doc 3: prepended to every path),
// the key is the stored bearer token, else the API key. Kind "octo" speaks
// DialectOCTO, "bookingsystem" DialectV2; any other kind is
// ErrNotBookingSystem. The one place a supplier's credentials become a
// booking-system connection.
func ConnectionFor(sup catalog.Supplier) (Connection, error) {
	c := sup.Connection
	conn := Connection{Endpoint: c.BaseURL, APIKey: c.Credentials.APIKey}
	if c.Credentials.BearerToken != "" {
		conn.APIKey = c.Credentials.BearerToken
	}
	switch c.Kind {
	case catalog.ConnectionBookingSystem:
		conn.Dialect = DialectV2
	case catalog.ConnectionOCTO:
		conn.Dialect = DialectOCTO
	default:
		return Connection{}, fmt.Errorf("supplier %s: %w", sup.ID, ErrNotBookingSystem)
	}
	return conn, nil
}

package catalogredis

import (
	"context"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// ConnectionRef is the Ref of supplier sid's connection (any supplier:
// the caller is our own holds and bookings service, not a principal).
func (s *Store) ConnectionRef(ctx context.Context, sid string) (string, error) {
	sup, err := s.scopedSupplier(ctx, catalog.SystemScope(), sid, nil)
	if err != nil {
		return "", err
	}
	return sup.Connection.Ref(), nil
}

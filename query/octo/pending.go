package octo

import "github.com/switchbackhq/switchback/query/httpapi"

// WIP (issue 26): the handlers are being written; until then every
// operation answers INTERNAL_SERVER_ERROR. This file goes away with them.

func (s *Service) pending(*httpapi.Request) error {
	return newError(ErrNameInternalServerError, "not implemented yet")
}

func (s *Service) supplier(r *httpapi.Request) error { return s.pending(r) }
func (s *Service) products(r *httpapi.Request) error { return s.pending(r) }
func (s *Service) product(r *httpapi.Request) error  { return s.pending(r) }
func (s *Service) calendar(r *httpapi.Request) error { return s.pending(r) }
func (s *Service) availability(r *httpapi.Request) error {
	return s.pending(r)
}
func (s *Service) reserve(r *httpapi.Request) error  { return s.pending(r) }
func (s *Service) bookings(r *httpapi.Request) error { return s.pending(r) }
func (s *Service) booking(r *httpapi.Request) error  { return s.pending(r) }
func (s *Service) update(r *httpapi.Request) error   { return s.pending(r) }
func (s *Service) confirm(r *httpapi.Request) error  { return s.pending(r) }
func (s *Service) extend(r *httpapi.Request) error   { return s.pending(r) }
func (s *Service) cancel(r *httpapi.Request) error   { return s.pending(r) }
func (s *Service) visibleSupplier(r *httpapi.Request) (string, error) {
	return "", s.pending(r)
}

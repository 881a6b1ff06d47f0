package operator

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// Cron reports (spec doc 3, rule 6): GET /cron/reports lists the summaries
// of the past 60 days, newest first; GET /cron/reports/{id} is the full
// report with its errorReport. An operator sees the reports of the
// suppliers it owns, an admin all; another operator's report is 404.

// CronScope is what the cron report routes need of the catalog: which
// suppliers an operator owns. *catalogredis.Store implements it.
type CronScope interface {
	Suppliers(ctx context.Context, sc catalog.Scope) ([]catalog.Supplier, error)
	OwnsSupplier(ctx context.Context, operatorID, supplierID string) (bool, error)
}

// RegisterCronReports adds the cron report routes to s.
func RegisterCronReports(s *httpapi.Server, cat CronScope, store *cronreport.Store) {
	h := cronReports{cat: cat, st: store}
	g := s.Group(httpapi.BaseOperatorV2)
	g.Handle(http.MethodGet, "/cron/reports", operatorRoles, h.list)
	g.Handle(http.MethodGet, "/cron/reports/{id}", operatorRoles, h.get)
}

type cronReports struct {
	cat CronScope
	st  *cronreport.Store
}

// Query parameters of GET /cron/reports (not shown in the spec): limit
// (1 to cronreport.MaxLimit, default cronreport.DefaultLimit), offset (0
// to cronreport.MaxOffset) and externalSystemID (one supplier's reports).
func (h cronReports) list(r *httpapi.Request) error {
	q := r.Ctx.QueryArgs()
	f := cronreport.Filter{ExternalSystemID: string(q.Peek("externalSystemID")), Limit: cronreport.DefaultLimit}
	for _, p := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"limit", &f.Limit, 1, cronreport.MaxLimit}, {"offset", &f.Offset, 0, cronreport.MaxOffset}} {
		v := q.Peek(p.name)
		if v == nil {
			continue
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < p.min || n > p.max {
			return apierror.Invalid(p.name, fmt.Sprintf("must be an integer from %d to %d", p.min, p.max))
		}
		*p.dst = n
	}
	if f.ExternalSystemID != "" && !catalog.ValidID(f.ExternalSystemID) {
		return apierror.Invalid("externalSystemID", "must be a supplier id")
	}
	if r.Principal.Role == principals.RoleAdmin {
		f.AllSuppliers = true
	} else {
		sups, err := h.cat.Suppliers(r.Context(), catalog.ScopeOf(r.Principal))
		if err != nil {
			return err
		}
		f.Suppliers = make([]string, len(sups))
		for i, s := range sups {
			f.Suppliers[i] = s.ID
		}
	}
	out, err := h.st.List(r.Context(), f)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, out)
}

func (h cronReports) get(r *httpapi.Request) error {
	id, err := cronreport.ParseID(r.Param("id"))
	if err != nil {
		return err
	}
	rep, err := h.st.Get(r.Context(), id)
	if err != nil {
		return err
	}
	if r.Principal.Role != principals.RoleAdmin {
		owns, err := h.cat.OwnsSupplier(r.Context(), r.Principal.ID, rep.ExternalSystemID)
		if err != nil {
			return err
		}
		if !owns {
			// The same answer as an unknown id: nothing of another
			// operator's report is revealed, not even that it exists.
			return fmt.Errorf("cron report %d: %w", id, cronreport.ErrNotFound)
		}
	}
	return r.JSON(http.StatusOK, rep)
}

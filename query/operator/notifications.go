package operator

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// Change notifications (spec doc 3): POST /notifications and
// /notifications/price-schedule queue a refresh of one supplier's product;
// GET /notifications lists, GET /notifications/{requestId} reads one. An
// operator sees its own requests, an admin all.

// Products is what the change notification routes need of the catalog:
// the product exists and the caller may manage its supplier.
type Products interface {
	Product(ctx context.Context, sc catalog.Scope, sid, pid string) (catalog.Product, error)
}

// RegisterNotifications adds the change notification routes to s.
func RegisterNotifications(s *httpapi.Server, cat Products, store *changerequest.Store) {
	h := notifications{cat: cat, st: store}
	g := s.Group(httpapi.BaseOperatorV2)
	g.Handle(http.MethodPost, "/notifications", operatorRoles, h.create(changerequest.ModeStandard))
	g.Handle(http.MethodPost, "/notifications/price-schedule", operatorRoles, h.create(changerequest.ModePriceSchedule))
	g.Handle(http.MethodGet, "/notifications", operatorRoles, h.list)
	g.Handle(http.MethodGet, "/notifications/{requestId}", operatorRoles, h.get)
}

type notifications struct {
	cat Products
	st  *changerequest.Store
}

type notificationBody struct {
	Notification changerequest.Request `json:"notification"`
}

type notificationsBody struct {
	Notifications []changerequest.Request `json:"notifications"`
}

// owner is the scope of a principal's requests: an admin's is everyone's.
func owner(p principals.Principal) string {
	if p.Role == principals.RoleAdmin {
		return ""
	}
	return p.ID
}

func (h notifications) create(mode string) httpapi.HandlerFunc {
	return func(r *httpapi.Request) error {
		q := r.Ctx.QueryArgs()
		in := changerequest.NewInput{SupplierID: string(q.Peek("supplierId")), ProductID: string(q.Peek("productId")),
			StartDate: string(q.Peek("startDate")), EndDate: string(q.Peek("endDate")), Mode: mode, Owner: r.Principal.ID}
		if in.SupplierID == "" {
			return apierror.Invalid("supplierId", "is required")
		}
		if in.ProductID == "" {
			return apierror.Invalid("productId", "is required")
		}
		// The product must exist under a supplier the caller manages. Doc
		// 3 lists 400, 401, 403 and 500 for this call: an unknown (or
		// another operator's) supplier or product is a bad parameter, the
		// same answer for both, as 404 is on every supplier path.
		if _, err := h.cat.Product(r.Context(), catalog.ScopeOf(r.Principal), in.SupplierID, in.ProductID); err != nil {
			if errors.Is(err, catalog.ErrNotFound) {
				field := "productId"
				if strings.HasPrefix(err.Error(), "supplier ") {
					field = "supplierId"
				}
				return apierror.Invalid(field, "is not the id of a "+strings.TrimSuffix(field, "Id")+" you manage")
			}
			return err
		}
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		req, err := h.st.Create(ctx, in)
		if err != nil {
			return err
		}
		return r.JSON(http.StatusCreated, notificationBody{Notification: req})
	}
}

func (h notifications) list(r *httpapi.Request) error {
	q := r.Ctx.QueryArgs()
	f := changerequest.Filter{Owner: owner(r.Principal), RequestID: string(q.Peek("requestId")), SupplierID: string(q.Peek("supplierId")),
		ProductID: string(q.Peek("productId")), Mode: string(q.Peek("mode")), Status: string(q.Peek("status")), Limit: 50}
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"limit", &f.Limit, changerequest.MaxLimit}, {"offset", &f.Offset, 1 << 30}} {
		v := q.Peek(p.name)
		if v == nil {
			continue
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 || (p.name == "limit" && n == 0) || n > p.max {
			return apierror.Invalid(p.name, "must be an integer from "+map[bool]string{true: "1", false: "0"}[p.name == "limit"]+" to "+strconv.Itoa(p.max))
		}
		*p.dst = n
	}
	switch f.Mode {
	case "", changerequest.ModeAny, changerequest.ModeStandard, changerequest.ModePriceSchedule:
	default:
		return apierror.Invalid("mode", "must be any, standard or price-schedule")
	}
	if f.Status != "" && !changerequest.ValidStatus(f.Status) {
		return apierror.Invalid("status", "must be WAITING, WORKING, SUCCEEDED, FAILED or PARTIAL_FAILURE")
	}
	rs, err := h.st.List(r.Context(), f)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, notificationsBody{Notifications: rs})
}

func (h notifications) get(r *httpapi.Request) error {
	req, err := h.st.Get(r.Context(), owner(r.Principal), r.Param("requestId"))
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, notificationBody{Notification: req})
}

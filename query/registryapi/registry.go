// Package registryapi maps the notification registry API v1.1 (spec doc 1,
// "Registry endpoints"; /registry/v1.1, reseller principals only) to calls
// on internal/registry. The subscriber is always the calling reseller
// principal, so one subscriber never sees or changes another's rules or
// metadata: another's rule id is simply not found (404).
//
// It must not hold rules: what a rule or a test body may contain, the
// defaults, the 409 on a second rule of a type and the storage order live
// in internal/registry; this package decodes bodies, calls it, and encodes
// the answers. Webhooks are sent through the Sender seam.
package registryapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// Registry is what the API needs of the registry (*registry.Registry
// implements it).
type Registry interface {
	Rule(ctx context.Context, subscriber, typ string) (registry.Rule, error)
	Create(ctx context.Context, subscriber, typ string, in registry.RuleInput) (registry.Rule, error)
	Update(ctx context.Context, subscriber, typ string, in registry.RuleInput) (registry.Rule, error)
	Delete(ctx context.Context, subscriber, typ, id string) error
	Metadata(ctx context.Context, subscriber string) (registry.Metadata, error)
	UpdateMetadata(ctx context.Context, subscriber string, in registry.MetadataInput) (registry.Metadata, error)
	TestNotification(ctx context.Context, subscriber, typ, id string, in registry.TestInput) (registry.Rule, schemas.Notification, error)
}

// Sender sends one signed notification to the rule's url at once (no
// queue, no throttle, no retry) and returns the subscriber's HTTP status.
// The dispatcher's webhook package implements it. err is for a delivery
// that got no status (refused target, connection error, timeout).
type Sender interface {
	SendTest(ctx context.Context, rule registry.Rule, n schemas.Notification) (status int, err error)
}

// Timeouts of one request's wait on its dependencies: a write's wait for
// Kafka (the registry bounds the publish itself too), a test's wait for
// the subscriber. Both stay under the server's write timeout.
const (
	writeTimeout = 15 * time.Second
	testTimeout  = 20 * time.Second
)

var resellerOnly = []principals.Role{principals.RoleReseller}

// Paths of the rule types (spec doc 1, "Registry endpoints"): CRUD of the
// channelbinding rule is under /channelbindings but its test under
// /channelbinding/test/{id}; every other type uses its name for both.
func crudPath(typ string) string {
	if typ == schemas.TypeChannelBinding {
		return "/channelbindings"
	}
	return "/" + typ
}

func testPath(typ string) string { return "/" + typ + "/test/{id}" }

// Register adds the registry routes to s. sender may be nil: the test
// endpoints then answer 503.
func Register(s *httpapi.Server, reg Registry, sender Sender) {
	g := s.Group(httpapi.BaseRegistryV11)
	for _, typ := range schemas.NotificationTypes() {
		h := handlers{reg: reg, sender: sender, typ: typ}
		g.Handle(http.MethodGet, crudPath(typ), resellerOnly, h.list)
		g.Handle(http.MethodPost, crudPath(typ), resellerOnly, h.create)
		g.Handle(http.MethodPut, crudPath(typ), resellerOnly, h.update)
		g.Handle(http.MethodDelete, crudPath(typ)+"/{id}", resellerOnly, h.delete)
		g.Handle(http.MethodPost, testPath(typ), resellerOnly, h.test)
	}
	m := metadataHandlers{reg: reg}
	g.Handle(http.MethodGet, "/metadata", resellerOnly, m.get)
	g.Handle(http.MethodPut, "/metadata", resellerOnly, m.put)
}

type handlers struct {
	reg    Registry
	sender Sender
	typ    string
}

// ruleBody is a Rule body (spec doc 1: id, url, disabled, config). The
// fields the service owns (securityKey, createdOn, updatedOn) and the
// meta object of our responses are accepted and ignored, so that a client
// can PUT back a rule it read.
type ruleBody struct {
	ID          string          `json:"id"`
	URL         string          `json:"url"`
	Disabled    bool            `json:"disabled"`
	Config      json.RawMessage `json:"config"`
	SecurityKey json.RawMessage `json:"securityKey"`
	CreatedOn   json.RawMessage `json:"createdOn"`
	UpdatedOn   json.RawMessage `json:"updatedOn"`
	Meta        json.RawMessage `json:"meta"`
}

// parseRuleBody decodes a rule body strictly (unknown fields refused).
func parseRuleBody(body []byte) (registry.RuleInput, error) {
	var b ruleBody
	if err := httpapi.DecodeJSON(body, &b); err != nil {
		return registry.RuleInput{}, err
	}
	return registry.RuleInput{ID: b.ID, URL: b.URL, Disabled: b.Disabled, Config: b.Config}, nil
}

// list answers the array of the subscriber's rules of the type: [] when it
// has none (docs/decisions.md), else the one rule.
func (h handlers) list(r *httpapi.Request) error {
	rule, err := h.reg.Rule(r.Context(), r.Principal.ID, h.typ)
	if errors.Is(err, registry.ErrNotFound) {
		return r.JSON(http.StatusOK, []registry.Rule{})
	}
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, []registry.Rule{rule})
}

func (h handlers) create(r *httpapi.Request) error {
	return h.write(r, http.StatusCreated, h.reg.Create)
}

func (h handlers) update(r *httpapi.Request) error {
	return h.write(r, http.StatusOK, h.reg.Update)
}

// write stores the rule of the request's body with op (the registry's
// Create or Update) and answers status with the stored rule.
func (h handlers) write(r *httpapi.Request, status int, op func(ctx context.Context, subscriber, typ string, in registry.RuleInput) (registry.Rule, error)) error {
	in, err := parseRuleBody(r.Ctx.PostBody())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	rule, err := op(ctx, r.Principal.ID, h.typ, in)
	if err != nil {
		return err
	}
	return r.JSON(status, rule)
}

func (h handlers) delete(r *httpapi.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := h.reg.Delete(ctx, r.Principal.ID, h.typ, r.Param("id")); err != nil {
		return err
	}
	return okNoBody(r)
}

// testBody is every field a test body may have; which ones a type takes is
// checked by internal/registry.
type testBody struct {
	SupplierID               *string `json:"supplierID"`
	ProductID                *string `json:"productID"`
	RateID                   *string `json:"rateID"`
	Start                    *string `json:"start"`
	End                      *string `json:"end"`
	BookingID                *string `json:"bookingID"`
	StartTime                *string `json:"startTime"`
	ResellerBookingReference *string `json:"resellerBookingReference"`
	Operation                *string `json:"operation"`
}

func parseTestBody(body []byte) (registry.TestInput, error) {
	var b testBody
	if err := httpapi.DecodeJSON(body, &b); err != nil {
		return registry.TestInput{}, err
	}
	return registry.TestInput(b), nil
}

// test sends one notification built from the body to the rule's url and
// answers 200 only if the subscriber answered 200. Otherwise the error
// object: INTERNAL (500, the only server-side status the spec lists for
// tests) with the subscriber's status in data.subscriberStatus, or without
// it when the subscriber could not be reached.
func (h handlers) test(r *httpapi.Request) error {
	in, err := parseTestBody(r.Ctx.PostBody())
	if err != nil {
		return err
	}
	rule, n, err := h.reg.TestNotification(r.Context(), r.Principal.ID, h.typ, r.Param("id"), in)
	if errors.Is(err, registry.ErrNotFound) {
		// Spec doc 1 lists 400 and 500 for the test endpoints: an id that
		// is not one of the caller's rules of the type is a bad request.
		return apierror.Invalid("id", "is not the id of your "+h.typ+" rule")
	}
	if err != nil {
		return err
	}
	if h.sender == nil {
		return apierror.New(apierror.Unavailable, "test notifications are not available on this instance")
	}
	ctx, cancel := context.WithTimeout(r.Context(), testTimeout)
	defer cancel()
	status, err := h.sender.SendTest(ctx, rule, n)
	switch {
	case err != nil:
		var coded interface{ ErrorCode() string }
		if errors.As(err, &coded) && apierror.Code(coded.ErrorCode()).Valid() && coded.ErrorCode() != string(apierror.Internal) {
			return err // e.g. the sender refused the target: its own code
		}
		e := apierror.New(apierror.Internal, "the test notification could not be delivered to "+rule.URL+": the subscriber did not answer")
		e.Data = map[string]string{"deliveryId": n.ID}
		e.Cause = err
		return e
	case status != http.StatusOK:
		e := apierror.New(apierror.Internal, "the subscriber answered "+strconv.Itoa(status)+" to the test notification; 200 was expected")
		e.Data = map[string]string{"subscriberStatus": strconv.Itoa(status), "deliveryId": n.ID}
		return e
	}
	return okNoBody(r)
}

// okNoBody answers 200 without a body: the spec's "200, no body" of
// DELETE and of the test endpoints.
func okNoBody(r *httpapi.Request) error {
	r.Ctx.Response.ResetBody()
	r.Ctx.SetStatusCode(http.StatusOK)
	return nil
}

type metadataHandlers struct{ reg Registry }

// metadataBody is PUT /metadata: the two settings; a field left out keeps
// its value. The fields the service owns and meta are accepted and ignored
// (a client can PUT back what it read).
type metadataBody struct {
	ThrottleDelay *string         `json:"throttleDelay"`
	DisableAll    *bool           `json:"disableAll"`
	CreatedOn     json.RawMessage `json:"createdOn"`
	UpdatedOn     json.RawMessage `json:"updatedOn"`
	Meta          json.RawMessage `json:"meta"`
}

func parseMetadataBody(body []byte) (registry.MetadataInput, error) {
	var b metadataBody
	if err := httpapi.DecodeJSON(body, &b); err != nil {
		return registry.MetadataInput{}, err
	}
	return registry.MetadataInput{ThrottleDelay: b.ThrottleDelay, DisableAll: b.DisableAll}, nil
}

// get answers the metadata; a subscriber that never set it gets the
// defaults (throttleDelay "0s", disableAll false) with 200, not 404.
func (m metadataHandlers) get(r *httpapi.Request) error {
	md, err := m.reg.Metadata(r.Context(), r.Principal.ID)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, md)
}

func (m metadataHandlers) put(r *httpapi.Request) error {
	in, err := parseMetadataBody(r.Ctx.PostBody())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	md, err := m.reg.UpdateMetadata(ctx, r.Principal.ID, in)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, md)
}

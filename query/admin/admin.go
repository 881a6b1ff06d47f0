// Package admin maps the admin API (/admin/v1, admin principals only) to
// calls on the principals store: create, list and revoke API credentials
// (ARCHITECTURE.md, "Admin bootstrap"). Sales channels (POST
// /admin/v1/channels) are query/channel's RegisterAdmin.
//
// It must not hold rules: which roles exist, what scope each needs and how
// secrets are made and stored live in internal/principals; this package
// only decodes bodies, calls the store and encodes answers.
package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// Principals is what the admin API needs of the principals store
// (*principals.Store implements it).
type Principals interface {
	Create(ctx context.Context, req principals.CreateRequest) (principals.Principal, string, error)
	Revoke(ctx context.Context, id string) error
	List() []principals.Principal
}

// Channels tells whether a sales channel exists (*catalogredis.Store implements
// it): a reseller principal belongs to one existing channel.
type Channels interface {
	Channel(ctx context.Context, id string) (catalog.Channel, error)
}

// writeTimeout bounds a write's wait for the broker's acknowledgement, so
// that an unreachable Kafka answers 503 instead of holding the request.
const writeTimeout = 10 * time.Second

var adminOnly = []principals.Role{principals.RoleAdmin}

// Register adds the admin routes to s.
func Register(s *httpapi.Server, p Principals, ch Channels) {
	h := handlers{p: p, ch: ch}
	g := s.Group(httpapi.BaseAdminV1)
	g.Handle(http.MethodPost, "/principals", adminOnly, h.create)
	g.Handle(http.MethodGet, "/principals", adminOnly, h.list)
	g.Handle(http.MethodDelete, "/principals/{id}", adminOnly, h.revoke)
}

type handlers struct {
	p  Principals
	ch Channels
}

// createBody is POST /admin/v1/principals:
// {"role":"reseller","channelId":"..."} | {"role":"operator","name":"..."} | {"role":"admin"}.
type createBody struct {
	Role      string `json:"role"`
	Name      string `json:"name"`
	ChannelID string `json:"channelId"`
}

// parseCreate decodes and shapes the body; the rules (role names, which
// role needs a channel) are checked by principals.Store.Create.
func parseCreate(body []byte) (principals.CreateRequest, error) {
	var b createBody
	if err := httpapi.DecodeJSON(body, &b); err != nil {
		return principals.CreateRequest{}, err
	}
	return principals.CreateRequest{Role: principals.Role(b.Role), Name: b.Name, ChannelID: b.ChannelID}, nil
}

// createdPrincipal is the 201 body: the only time the secret is shown.
type createdPrincipal struct {
	ID        string          `json:"id"`
	Role      principals.Role `json:"role"`
	Name      string          `json:"name"`
	ChannelID string          `json:"channelId,omitempty"`
	Key       string          `json:"key"`
	Secret    string          `json:"secret"`
	CreatedAt time.Time       `json:"createdAt"`
}

func (h handlers) create(r *httpapi.Request) error {
	req, err := parseCreate(r.Ctx.PostBody())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if req.Role == principals.RoleReseller && req.ChannelID != "" {
		// A reseller sees what its channel is bound to: one on a channel
		// that does not exist would see nothing, silently.
		if _, err := h.ch.Channel(ctx, req.ChannelID); errors.Is(err, catalog.ErrNotFound) {
			return apierror.Invalid("channelId", "is not a known sales channel (POST /admin/v1/channels creates one)")
		} else if err != nil {
			return err
		}
	}
	p, secret, err := h.p.Create(ctx, req)
	if err != nil {
		return err
	}
	return r.JSON(http.StatusCreated, createdPrincipal{
		ID: p.ID, Role: p.Role, Name: p.Name, ChannelID: p.ChannelID, Key: p.Key, Secret: secret, CreatedAt: p.CreatedAt,
	})
}

type principalList struct {
	Principals []principals.View `json:"principals"`
}

func (h handlers) list(r *httpapi.Request) error {
	all := h.p.List()
	out := principalList{Principals: make([]principals.View, 0, len(all))}
	for _, p := range all {
		out.Principals = append(out.Principals, p.View())
	}
	return r.JSON(http.StatusOK, out)
}

func (h handlers) revoke(r *httpapi.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := h.p.Revoke(ctx, r.Param("id")); err != nil {
		return err
	}
	return r.NoContent()
}

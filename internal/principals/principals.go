// Package principals owns Switchback's API principals: who may call the
// APIs, with which role and scope, and how their credentials are checked.
//
// The table is an in-memory view built only by applying events from the
// switchback.principals topic (Kafka is the log of record): writes publish
// first and apply locally second, and a follower applies every record of
// the topic at start, so every query instance converges on the same table.
//
// It must not know about HTTP: handlers in query/ map requests to these
// calls, and map this package's sentinel errors to statuses through their
// ErrorCode (see query/apierror). It never logs or renders a secret, a
// secret hash or a salt.
package principals

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// Role says what a principal may do. Routes list the roles they admit.
type Role string

// The three roles of ARCHITECTURE.md ("Interfaces and conventions").
const (
	RoleReseller Role = "reseller" // scope: one sales channel (ChannelID)
	RoleOperator Role = "operator" // scope: the suppliers it owns (OperatorID)
	RoleAdmin    Role = "admin"    // manages principals and channels
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool {
	switch r {
	case RoleReseller, RoleOperator, RoleAdmin:
		return true
	}
	return false
}

// Lengths of the credential material.
const (
	saltLen   = 16
	secretLen = 32 // random bytes of a generated secret, before base64url
	// MaxSecretLen bounds what Authenticate hashes (and what EnsureFixed
	// accepts) so that the hot path hashes from a stack buffer and a client
	// cannot make us hash megabytes.
	MaxSecretLen = 256
	// MaxKeyLen bounds keys, including fixed ones from the environment.
	MaxKeyLen = 128
	// MaxNameLen bounds display names.
	MaxNameLen = 200
	// MaxChannelIDLen bounds a reseller's channel id.
	MaxChannelIDLen = 128
)

// Principal is one API identity. Values are immutable snapshots: the Store
// swaps whole principals, so a Principal returned to a caller never changes
// under it. SecretHash and Salt are arrays, not slices, for the same reason.
//
// A Principal renders without its secret material: String, LogValue and
// MarshalJSON all go through View.
type Principal struct {
	ID   string
	Role Role
	Name string
	// ChannelID is a reseller's scope: the one sales channel it sells on.
	ChannelID string
	// Key is the public half of the credential (X-API-Key).
	Key string
	// SecretHash is SHA-256(Salt || secret). See hashSecret for why a fast
	// hash is right here.
	SecretHash [32]byte
	Salt       [saltLen]byte
	CreatedAt  time.Time
	RevokedAt  *time.Time
	// Version orders successive states of this principal on the topic;
	// Apply ignores a record whose version is not newer than what it has.
	Version int64
}

// Revoked reports whether the principal's credential no longer works.
func (p Principal) Revoked() bool { return p.RevokedAt != nil }

// OperatorID is the owner id that catalog code stores on the suppliers an
// operator creates: an operator's scope is "the suppliers it owns", and
// ownership is recorded as this id rather than as a list on the principal,
// so that creating a supplier never has to rewrite the principal. Empty for
// other roles.
func (p Principal) OperatorID() string {
	if p.Role == RoleOperator {
		return p.ID
	}
	return ""
}

// View is what may leave the process about a principal: no secret, no
// hash, no salt. The admin API renders it.
type View struct {
	ID        string     `json:"id"`
	Role      Role       `json:"role"`
	Name      string     `json:"name,omitempty"`
	ChannelID string     `json:"channelId,omitempty"`
	Key       string     `json:"key"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// View returns the renderable part of p.
func (p Principal) View() View {
	return View{ID: p.ID, Role: p.Role, Name: p.Name, ChannelID: p.ChannelID, Key: p.Key, CreatedAt: p.CreatedAt, RevokedAt: p.RevokedAt}
}

// String never includes secret material, so %v in a log line is safe.
func (p Principal) String() string {
	return fmt.Sprintf("principal{id=%s role=%s name=%q key=%s revoked=%t}", p.ID, p.Role, p.Name, p.Key, p.Revoked())
}

// LogValue makes slog render the principal without secret material.
func (p Principal) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", p.ID), slog.String("role", string(p.Role)), slog.String("key", p.Key))
}

// MarshalJSON renders the View, so that encoding a Principal by mistake
// cannot leak its hash and salt.
func (p Principal) MarshalJSON() ([]byte, error) { return json.Marshal(p.View()) }

// CreateRequest is what an admin asks for. Key and secret are generated.
type CreateRequest struct {
	Role      Role
	Name      string
	ChannelID string
}

// validate applies the scope rules: a reseller must name its channel, and
// only a reseller has one (a channel on another role would be a scope that
// nothing enforces, so it is refused rather than silently kept).
func (r CreateRequest) validate() error {
	switch {
	case r.Role == "":
		return &FieldError{Field: "role", Reason: "is required (reseller, operator or admin)"}
	case !r.Role.Valid():
		return &FieldError{Field: "role", Reason: fmt.Sprintf("must be reseller, operator or admin, not %q", string(r.Role))}
	case r.Role == RoleReseller && r.ChannelID == "":
		return &FieldError{Field: "channelId", Reason: "is required for a reseller"}
	case r.Role != RoleReseller && r.ChannelID != "":
		return &FieldError{Field: "channelId", Reason: "is only allowed for a reseller"}
	case len(r.ChannelID) > MaxChannelIDLen:
		return &FieldError{Field: "channelId", Reason: fmt.Sprintf("must be at most %d characters", MaxChannelIDLen)}
	case !printable(r.ChannelID):
		return &FieldError{Field: "channelId", Reason: "must be printable ASCII"}
	case len(r.Name) > MaxNameLen:
		return &FieldError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", MaxNameLen)}
	}
	return nil
}

// printable reports whether s is printable ASCII without spaces at the
// edges: keys and channel ids end up in headers, logs and URLs.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

package principals

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Create makes a principal with a generated key and secret. The event is
// published to schemas.TopicPrincipals (keyed by principal id) before the
// local table changes, and applied locally once the broker acknowledged
// it, so the caller can use the credential at once. The secret is returned
// only here; only its salted hash is stored or published.
func (s *Store) Create(ctx context.Context, req CreateRequest) (Principal, string, error) {
	if err := req.validate(); err != nil {
		return Principal{}, "", err
	}
	secret := newSecret()
	p := Principal{
		ID:        uuid.NewString(),
		Role:      req.Role,
		Name:      req.Name,
		ChannelID: req.ChannelID,
		Key:       newKey(),
		Salt:      newSalt(),
		CreatedAt: s.timestamp(),
		Version:   1,
	}
	p.SecretHash = hashSecret(&p.Salt, secret)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.publishApply(ctx, EventCreated, p); err != nil {
		return Principal{}, "", err
	}
	return p, secret, nil
}

// Revoke makes the principal's credential stop working at once in this
// process and, through the topic, everywhere. The principal stays listed
// with its revokedAt. Revoking a revoked principal is a no-op; an unknown
// id is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, id string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	p, err := s.Get(id)
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	if p.Revoked() {
		return nil
	}
	now := s.timestamp()
	p.RevokedAt = &now
	p.Version++
	return s.publishApply(ctx, EventRevoked, p)
}

// EnsureFixed makes sure a principal with this fixed key and secret exists
// (demo principals, SWITCHBACK_ADMIN_KEY bootstrap). Its id is FixedID(key).
// It publishes only when the principal is absent or differs (secret hash,
// role, name or channel), so restarts do not republish. Call it after the
// store caught up with the topic, or it republishes what it has not seen.
//
// A revoked fixed principal stays revoked while its secret is unchanged:
// revocation is an admin decision a restart must not undo. Configuring a
// new secret re-creates it, unrevoked.
func (s *Store) EnsureFixed(ctx context.Context, key, secret string, role Role, name, channelID string) (Principal, error) {
	switch {
	case key == "" || len(key) > MaxKeyLen || !printable(key):
		return Principal{}, &FieldError{Field: "key", Reason: fmt.Sprintf("must be 1 to %d printable ASCII characters without spaces", MaxKeyLen)}
	case secret == "" || len(secret) > MaxSecretLen:
		return Principal{}, &FieldError{Field: "secret", Reason: fmt.Sprintf("must be 1 to %d bytes", MaxSecretLen)}
	}
	if err := (CreateRequest{Role: role, Name: name, ChannelID: channelID}).validate(); err != nil {
		return Principal{}, err
	}
	id := FixedID(key)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	t := s.cur.Load()
	cur, ok := t.byID[id]
	if ok {
		sum := hashSecret(&cur.Salt, secret)
		sameSecret := subtle.ConstantTimeCompare(sum[:], cur.SecretHash[:]) == 1
		if sameSecret && cur.Key == key && cur.Role == role && cur.Name == name && cur.ChannelID == channelID {
			return *cur, nil
		}
		p := *cur
		p.Key, p.Role, p.Name, p.ChannelID = key, role, name, channelID
		if !sameSecret {
			p.Salt = newSalt()
			p.SecretHash = hashSecret(&p.Salt, secret)
			p.RevokedAt = nil
		}
		p.Version++
		return p, s.publishApply(ctx, EventUpdated, p)
	}
	p := Principal{
		ID: id, Role: role, Name: name, ChannelID: channelID, Key: key,
		Salt: newSalt(), CreatedAt: s.timestamp(),
		// After a tombstone the id must come back with a newer version, or
		// Apply would (rightly) ignore it.
		Version: t.gone[id] + 1,
	}
	p.SecretHash = hashSecret(&p.Salt, secret)
	return p, s.publishApply(ctx, EventCreated, p)
}

// publishApply is the Kafka-first write: publish, and only once the broker
// acknowledged, apply locally. A failed publish changes nothing anywhere.
func (s *Store) publishApply(ctx context.Context, typ string, p Principal) error {
	if s.pub == nil {
		return fmt.Errorf("principal %s: no publisher: %w", p.ID, ErrUnavailable)
	}
	data, err := json.Marshal(p.record())
	if err != nil {
		return fmt.Errorf("encode principal %s: %w", p.ID, err)
	}
	env := schemas.Envelope{
		ID:      uuid.NewString(),
		Type:    typ,
		Key:     p.ID,
		Version: p.Version,
		Time:    s.timestamp(),
		Source:  s.source,
		Data:    data,
	}
	value, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode principal event %s: %w", p.ID, err)
	}
	msg := stream.Message{Topic: schemas.TopicPrincipals, Key: []byte(p.ID), Value: value}
	if err := s.pub.Publish(ctx, msg); err != nil {
		return fmt.Errorf("publish principal %s: %w: %w", p.ID, ErrUnavailable, err)
	}
	if err := s.Apply(env); err != nil {
		// Cannot happen for an event we built; if it does, the follower
		// will hit the same error on the record, so say so loudly.
		return fmt.Errorf("apply own principal event %s: %w", p.ID, err)
	}
	return nil
}

// timestamp is the store's clock in UTC at millisecond precision: what a
// JSON round trip through the topic preserves, so local and replayed
// principals compare equal.
func (s *Store) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

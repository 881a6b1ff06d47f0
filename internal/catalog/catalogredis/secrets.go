package catalogredis

import (
	"context"
	"fmt"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/keyring"
)

// Credentials at rest (issue 18): a supplier's apiKey, apiSecret and
// bearerToken are sealed (internal/platform/keyring, AES-GCM) before the supplier
// is published or stored in Redis, each bound to its supplier and field;
// Supplier opens them for the clients that call the supplier's system.
// Every other read (lists, renderings, the writer's own lock) keeps them
// sealed, and no API view carries them anyway.

func credentialAAD(sid, field string) string { return "supplier/" + sid + "/" + field }

// sealCredentials seals the plaintext fields of c for supplier sid. A
// field whose plaintext is that of the stored one (cur, sealed) keeps the
// stored value, so that a PUT repeating the credentials changes nothing
// (no new version). Without a key, new credentials are refused
// (keyring.ErrNoKey), never stored in clear.
func (s *Store) sealCredentials(sid string, c catalog.Credentials, cur *catalog.Credentials) (catalog.Credentials, error) {
	fields := []struct {
		name      string
		v, stored *string
	}{{"apiKey", &c.APIKey, nil}, {"apiSecret", &c.APISecret, nil}, {"bearerToken", &c.BearerToken, nil}}
	if cur != nil {
		fields[0].stored, fields[1].stored, fields[2].stored = &cur.APIKey, &cur.APISecret, &cur.BearerToken
	}
	for _, f := range fields {
		if *f.v == "" || keyring.Sealed(*f.v) {
			continue
		}
		aad := credentialAAD(sid, f.name)
		if f.stored != nil && *f.stored != "" {
			if p, err := s.secrets.Open(*f.stored, aad); err == nil && p == *f.v && s.secrets.Current(*f.stored) {
				*f.v = *f.stored
				continue
			}
		}
		sealed, err := s.secrets.Seal(*f.v, aad)
		if err != nil {
			return catalog.Credentials{}, fmt.Errorf("supplier %s credentials: %w", sid, err)
		}
		*f.v = sealed
	}
	return c, nil
}

// openCredentials opens the sealed fields of sup's credentials.
func (s *Store) openCredentials(_ context.Context, sup *catalog.Supplier) error {
	c := &sup.Connection.Credentials
	for _, f := range []struct {
		name string
		v    *string
	}{{"apiKey", &c.APIKey}, {"apiSecret", &c.APISecret}, {"bearerToken", &c.BearerToken}} {
		p, err := s.secrets.Open(*f.v, credentialAAD(sup.ID, f.name))
		if err != nil {
			return fmt.Errorf("supplier %s credentials: %w", sup.ID, err)
		}
		*f.v = p
	}
	return nil
}

package catalogredis

import (
	"strconv"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/schemas"
)

// Availability sets are the catalog's largest and most frequent records (a
// booking-system option's 90 days are hundreds of slots, written at every
// change), and a write used to encode each set four times with
// encoding/json (to compare it with the stored one, into the event, into
// the envelope, into Redis). They are now encoded once, by hand, and the
// bytes reused; TestAvailWire_MatchesEncodingJSON holds them equal to
// encoding/json's, and a set it cannot write exactly goes through it.

// availSetJSON is set as encoding/json writes it.
func availSetJSON(set catalog.AvailabilitySet) []byte {
	if b, ok := appendAvailSet(make([]byte, 0, 96+len(set.Availabilities)*120), set); ok {
		return b
	}
	return catalogwire.MustJSON(set)
}

func appendAvailSet(b []byte, set catalog.AvailabilitySet) ([]byte, bool) {
	b = append(b, `{"supplierId":`...)
	b = jsonwire.AppendString(b, set.SupplierID)
	b = append(b, `,"productId":`...)
	b = jsonwire.AppendString(b, set.ProductID)
	b = append(b, `,"rateId":`...)
	b = jsonwire.AppendString(b, set.RateID)
	b = append(b, `,"availabilities":`...)
	if set.Availabilities == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range set.Availabilities {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendAvailability(b, a); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, set.Version, 10)
	return append(b, '}'), true
}

func appendAvailability(b []byte, a catalog.Availability) ([]byte, bool) {
	b = append(b, '{')
	b, ok := schemas.Availability{ID: a.ID, Start: a.Start, End: a.End, Capacity: a.Capacity, MaxCapacity: a.MaxCapacity}.AppendMembers(b)
	if !ok {
		return b, false
	}
	if a.SystemID != "" {
		b = append(b, `,"systemId":`...)
		b = jsonwire.AppendString(b, a.SystemID)
	}
	return append(b, '}'), true
}

// availEventJSON is the availability Event of set as encoding/json writes
// it, with the set's bytes already encoded.
func availEventJSON(set catalog.AvailabilitySet, setJSON []byte) []byte {
	b := make([]byte, 0, 128+len(setJSON))
	b = append(b, `{"kind":"`+string(schemas.CatalogKindAvailability)+`"`...)
	if set.SupplierID != "" {
		b = append(b, `,"supplierId":`...)
		b = jsonwire.AppendString(b, set.SupplierID)
	}
	if set.ProductID != "" {
		b = append(b, `,"productId":`...)
		b = jsonwire.AppendString(b, set.ProductID)
	}
	if set.RateID != "" {
		b = append(b, `,"rateId":`...)
		b = jsonwire.AppendString(b, set.RateID)
	}
	b = append(b, `,"availability":`...)
	b = append(b, setJSON...)
	return append(b, '}')
}

// envelopeJSON is env as encoding/json writes it, env.Data being valid
// JSON (availEventJSON's); ok false when a time cannot be written by hand
// or encoding/json would rewrite the data (jsonwire.RawAsIs).
func envelopeJSON(env schemas.Envelope) ([]byte, bool) {
	if !jsonwire.RawAsIs(env.Data) {
		return nil, false
	}
	b := make([]byte, 0, 192+len(env.Data))
	b = append(b, `{"id":`...)
	b = jsonwire.AppendString(b, env.ID)
	b = append(b, `,"type":`...)
	b = jsonwire.AppendString(b, env.Type)
	b = append(b, `,"key":`...)
	b = jsonwire.AppendString(b, env.Key)
	if env.Version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, env.Version, 10)
	}
	b = append(b, `,"time":`...)
	b, ok := jsonwire.AppendTime(b, env.Time)
	if !ok {
		return nil, false
	}
	if env.Source != "" {
		b = append(b, `,"source":`...)
		b = jsonwire.AppendString(b, env.Source)
	}
	if env.Deleted {
		b = append(b, `,"deleted":true`...)
	}
	if len(env.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, env.Data...)
	}
	return append(b, '}'), true
}

package schemas

import "github.com/switchbackhq/switchback/internal/platform/jsonwire"

// envelopeKeys are the envelope's JSON keys, as encoding/json maps them.
var envelopeKeys = [...]string{"id", "type", "key", "version", "time", "source", "deleted", "data"}

// ReadEnvelope reads value as an Envelope in one pass of jsonwire.Reader,
// without encoding/json's reflection and its validating scan: the hot
// consumers (the availability processor, the history sink) read every
// record's envelope, and encoding/json was most of their CPU. It takes only
// the plain shape producers write: each envelope key once and in its exact
// case, strings without escapes, an integer version, a boolean deleted, a
// non-null data (kept as its bytes, a slice of value). Anything else
// answers ok=false, and the caller decodes value with encoding/json, which
// has the last word; FuzzReadEnvelope holds the two equal whenever this
// one accepts.
func ReadEnvelope(value []byte) (env Envelope, ok bool) {
	r := jsonwire.NewReader(value)
	var seen uint8
	ok = r.Object(func(key []byte) bool {
		for i, k := range envelopeKeys {
			if string(key) == k {
				if seen&(1<<i) != 0 {
					return false // repeated: encoding/json keeps the last, merging objects
				}
				seen |= 1 << i
			}
		}
		switch string(key) {
		case "id":
			env.ID, _ = r.Str()
		case "type":
			env.Type, _ = r.Str()
		case "key":
			env.Key, _ = r.Str()
		case "version":
			env.Version = r.Int()
		case "time":
			env.Time = r.Time()
		case "source":
			env.Source, _ = r.Str()
		case "deleted":
			env.Deleted = r.Bool()
		case "data":
			env.Data = r.Raw()
		default:
			return r.Unknown(key, envelopeKeys[:]...)
		}
		return r.OK()
	})
	if !ok || !r.End() {
		return Envelope{}, false
	}
	return env, true
}

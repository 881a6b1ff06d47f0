package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Fingerprint identifies the public content of a supplier, product or
// rate (version aside): two states with one fingerprint show resellers
// the same thing. Change detection compares fingerprints, so that a
// re-sent identical record, or a change of what resellers never see (a
// supplier's connection), notifies nobody.
func Fingerprint(v any) string {
	var b []byte
	switch x := v.(type) {
	case *Supplier:
		b = mustJSON(x.SupplierData)
	case *Product:
		b = mustJSON(x.ProductData)
	case *Rate:
		b = mustJSON(x.RateData)
	default:
		b = mustJSON(v)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// mustJSON encodes values whose types are ours: plain structs of
// strings, numbers, slices and string maps cannot fail to encode (a
// json.RawMessage is validated before it is stored).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("catalog: encode " + err.Error())
	}
	return b
}

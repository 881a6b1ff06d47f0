package catalog

import (
	"crypto/sha256"
	"encoding/hex"
)

// Ref names the system a connection reaches: its kind and baseUrl, not
// its credentials (rotating them reaches the same system). Holds and
// bookings record the Ref of their supplier's connection when they are
// made, so that a later change of the connection does not silently send
// their reads and cancels to another system (internal/booking).
func (c Connection) Ref() string {
	h := sha256.Sum256([]byte(c.Kind + "\n" + c.BaseURL))
	return hex.EncodeToString(h[:12])
}

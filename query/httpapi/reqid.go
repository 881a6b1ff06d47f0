package httpapi

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// maxRequestIDLen bounds a client's X-Request-ID: it is echoed in a header
// and in every body and logged, so it must stay small.
const maxRequestIDLen = 128

// canonicalRequestID is HeaderRequestID as fasthttp writes it, so that
// setting it skips the normalizing copy of Header.Set on every request.
var canonicalRequestID = []byte("X-Request-Id")

// setRequestID makes r.ID the client's X-Request-ID when it is sane, so
// that a client can correlate its own logs with ours, otherwise a fresh
// UUIDv4, and sets the answer's header.
func setRequestID(r *Request) {
	h := &r.Ctx.Response.Header
	if v := r.hdr.requestID; saneRequestID(v) {
		r.ID = string(v)
		h.SetCanonical(canonicalRequestID, v)
		return
	}
	var b [36]byte
	appendUUIDv4(&b)
	r.ID = string(b[:])
	h.SetCanonical(canonicalRequestID, b[:])
}

// appendUUIDv4 writes a random UUIDv4 into b: uuid.NewString without its
// heap allocations (the UUID escapes through io.ReadFull, as it does
// through crypto/rand.Read). A request id is a correlation id, not a
// secret, so math/rand/v2's runtime generator (ChaCha8 seeded by the OS,
// per thread, lock-free) is random enough.
func appendUUIDv4(b *[36]byte) {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[0:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:16], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
}

// saneRequestID: 1 to 128 printable ASCII characters. Anything else (control
// characters, non-ASCII, oversize) could forge log lines or bloat every
// response, so it is replaced rather than echoed.
func saneRequestID(v []byte) bool {
	if len(v) == 0 || len(v) > maxRequestIDLen {
		return false
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

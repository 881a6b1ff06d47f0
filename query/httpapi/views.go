package httpapi

import (
	"bytes"
	"context"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/query/apierror"
)

// Views tells the server whether the Redis views its handlers read are
// complete (internal/platform/views.Guard implements it). Redis is a view rebuilt
// from Kafka; after a FLUSHALL or a Redis restarted without its data, its
// answers are wrong until the rebuild is done, so:
//
//   - while the views are not complete, every route answers 503
//     UNAVAILABLE with Retry-After (after authentication and the role
//     check, which do not read Redis);
//   - a write (any method but GET and HEAD) first confirms the marker, so
//     that it never decides on a view lost since the last poll;
//   - a 4xx a handler produced (404 above all: a lost view reads as
//     "absent") is served only once the marker is confirmed, else it
//     becomes the 503;
//   - a successful read is replaced by the 503 if the views changed while
//     it ran (an atomic load; no Redis round trip on the hot path).
type Views interface {
	// Current returns the generation of the views' state and whether they
	// are complete in it. It must not block or allocate.
	Current() (gen uint64, ready bool)
	// Confirm returns nil if the views are still complete under gen (it
	// reads Redis once), else an error.
	Confirm(ctx context.Context, gen uint64) error
}

// viewsRetryAfter is the Retry-After of the 503 while the views are
// rebuilt: a rebuild takes seconds, and a client polling faster would only
// add load.
const viewsRetryAfter = "1"

// isRead reports whether the method only reads.
func isRead(method []byte) bool {
	return bytes.Equal(method, []byte(fasthttp.MethodGet)) || bytes.Equal(method, []byte(fasthttp.MethodHead))
}

// viewsUnavailable replaces whatever the handler wrote with the 503. It is
// not logged per request: a rebuild can refuse thousands a second, and the
// guard logs the loss once.
func viewsUnavailable(r *Request) {
	ctx := r.Ctx
	ctx.Response.Reset()
	ctx.Response.Header.Set(HeaderRequestID, r.ID)
	ctx.Response.Header.Set(HeaderRetryAfter, viewsRetryAfter)
	if r.route != nil && r.route.dialect != nil {
		r.route.dialect.WriteError(ctx, r.ID, apierror.ErrUnavailable, apierror.ErrUnavailable)
		return
	}
	writeError(ctx, r.ID, apierror.ErrUnavailable)
}

package httpapi

import "time"

// SetClock makes s read time from now, for tests of the rate limit's
// refill that must not sleep. Call it before Serve.
func SetClock(s *Server, now func() time.Time) {
	s.now = now
	if s.limiter != nil {
		s.limiter.epoch = now()
	}
	if s.costly != nil {
		s.costly.epoch = now()
	}
}

// RateLimitBuckets is the number of buckets the limiter holds, and
// RateLimitBound the most it may hold (0, 0 when limiting is off).
func RateLimitBuckets(s *Server) int {
	if s.limiter == nil {
		return 0
	}
	return s.limiter.len()
}

func RateLimitBound(s *Server) int {
	if s.limiter == nil {
		return 0
	}
	return s.limiter.bound()
}

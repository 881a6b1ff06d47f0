package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/segmentio/kafka-go"
)

// ReaderErrorLogger is the ErrorLogger of every consumer-group reader of the
// service (GroupReader: the consumers, the history sink, the dispatcher's intake).
// kafka-go reports through it both real trouble and two events it
// recovers from by itself on every healthy run; those two are logged at
// debug, everything else at warn (docs/decisions.md, "Kafka reader log
// lines"):
//
//   - a fetch that timed out on the client ("i/o timeout"): the reader
//     gives the broker its MaxWait less a quarter to answer an idle fetch
//     and closes the connection when the answer is later than MaxWait;
//     it reconnects and fetches again from the same offset, so nothing
//     is lost or read twice. The embedded broker answers idle fetches
//     from one loop and is late by a few milliseconds under load.
//   - "Rebalance In Progress" (error 27) while joining or syncing a
//     group: the coordinator asks the member to join again because
//     another member joined or left, the normal start of a group whose
//     members start one after the other.
func ReaderErrorLogger(log *slog.Logger) kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...any) {
		level := slog.LevelWarn
		if routine(msg, args) {
			level = slog.LevelDebug
		}
		ctx := context.Background()
		if !log.Enabled(ctx, level) {
			return
		}
		log.Log(ctx, level, "kafka reader: "+truncate(fmt.Sprintf(msg, args...)))
	})
}

// fetchFailed is how kafka-go starts the line of a failed fetch on an
// established connection (reader.go), as opposed to a failed dial or
// group call, which stay warnings whatever their cause.
const fetchFailed = "the kafka reader got an unknown error reading partition"

// routine reports whether a reader's error line is one of the two it
// recovers from by itself (see ReaderErrorLogger).
func routine(msg string, args []any) bool {
	for _, a := range args {
		err, ok := a.(error)
		if !ok {
			continue
		}
		if errors.Is(err, kafka.RebalanceInProgress) {
			return true
		}
		var ne net.Error
		if strings.HasPrefix(msg, fetchFailed) && (errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())) {
			return true
		}
	}
	return false
}

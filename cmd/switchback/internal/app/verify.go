package app

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/switchbackhq/switchback/internal/webhook"
)

// Verify is `switchback verify`: it checks the signature of a received
// webhook body (a file, or standard input) with the rule's securityKey, the
// way a subscriber should (spec doc 1, Authentication 1). The key is read
// from SWITCHBACK_VERIFY_KEY unless --key is given, so that it need not
// appear in shell history or process lists.
func Verify(args []string, getenv func(string) string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("switchback verify", flag.ContinueOnError)
	key := fs.String("key", "", "the rule's securityKey (default: env SWITCHBACK_VERIFY_KEY)")
	maxAge := fs.Duration("max-age", 0, "also refuse a signature older than this (0: no freshness check)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: switchback verify [--key KEY] [--max-age 5m] [FILE]   (body on stdin without FILE)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	k := *key
	if k == "" {
		k = getenv("SWITCHBACK_VERIFY_KEY")
	}
	if k == "" {
		return errors.New("verify: no securityKey: set SWITCHBACK_VERIFY_KEY or --key")
	}
	var body []byte
	var err error
	switch fs.NArg() {
	case 0:
		body, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	case 1:
		body, err = os.ReadFile(fs.Arg(0))
	default:
		return errors.New("verify: give at most one file")
	}
	if err != nil {
		return fmt.Errorf("verify: read body: %w", err)
	}
	if err := webhook.VerifyBody(k, body); err != nil {
		return fmt.Errorf("verify: INVALID: %w", err)
	}
	if *maxAge > 0 {
		var wire struct {
			Signature struct {
				Timestamp int64 `json:"timestamp"`
			} `json:"signature"`
		}
		_ = json.Unmarshal(body, &wire)
		age := time.Since(time.Unix(wire.Signature.Timestamp, 0))
		if age > *maxAge {
			return fmt.Errorf("verify: INVALID: signature is %s old, more than --max-age %s", age.Round(time.Second), *maxAge)
		}
	}
	fmt.Fprintln(out, "valid signature")
	return nil
}

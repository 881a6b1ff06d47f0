package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// Migrate applies the ClickHouse DDL of schemas/ to SWITCHBACK_CLICKHOUSE_URL.
func Migrate(ctx context.Context, cfg config.Config, out io.Writer) error {
	if cfg.ClickHouseURL == "" {
		return errors.New("invalid SWITCHBACK_CLICKHOUSE_URL: migrate needs an external ClickHouse (embedded mode migrates at start)")
	}
	conn, err := warehouse.Open(ctx, cfg.ClickHouseURL)
	if err != nil {
		return fmt.Errorf("connect to ClickHouse %s: %w", config.RedactURL(cfg.ClickHouseURL), err)
	}
	defer conn.Close()
	applied, err := warehouse.Migrate(ctx, conn, schemas.ClickHouseFS())
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "ClickHouse schema is up to date; nothing applied")
		return nil
	}
	for _, f := range applied {
		fmt.Fprintln(out, "applied", f)
	}
	return nil
}

const principalsUsage = `Usage:
  switchback principals create --role reseller --channel-id ID [--name NAME]
  switchback principals create --role operator --name NAME
  switchback principals create --role admin [--name NAME]
  switchback principals list
  switchback principals revoke ID

The principals live on the principals topic: the command needs a reachable
broker (SWITCHBACK_KAFKA_BROKERS, or the embedded one of a running
'switchback run' at SWITCHBACK_EMBEDDED_KAFKA_ADDR).
`

// Principals is the `switchback principals` command: API credentials managed
// straight on the principals topic, as the admin API does.
func Principals(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, principalsUsage)
		return errors.New("principals: missing subcommand")
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("switchback principals "+sub, flag.ContinueOnError)
	role := fs.String("role", "", "reseller, operator or admin")
	name := fs.String("name", "", "display name")
	channel := fs.String("channel-id", "", "sales channel of a reseller")
	brokersFlag := fs.String("kafka-brokers", "", "Kafka brokers (env SWITCHBACK_KAFKA_BROKERS)")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	env := getenv
	if *brokersFlag != "" {
		env = func(k string) string {
			if k == "SWITCHBACK_KAFKA_BROKERS" {
				return *brokersFlag
			}
			return getenv(k)
		}
	}
	cfg, err := config.Load("switchback principals", nil, env)
	if err != nil {
		return err
	}
	brokers := cfg.KafkaBrokers
	if len(brokers) == 0 {
		brokers = []string{cfg.EmbeddedKafkaAddr}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := stream.Ping(pctx, brokers); err != nil {
		return fmt.Errorf("no broker reachable at %v (start 'switchback run' or set SWITCHBACK_KAFKA_BROKERS): %w", brokers, err)
	}
	prod := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer prod.Close()
	store := principals.NewStore(prod)
	if err := stream.ReadAll(pctx, brokers, schemas.TopicPrincipals, func(m stream.Message) error {
		var e schemas.Envelope
		if json.Unmarshal(m.Value, &e) == nil {
			_ = store.Apply(e)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read principals: %w", err)
	}

	switch sub {
	case "list":
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tROLE\tNAME\tKEY\tCHANNEL\tREVOKED")
		for _, p := range store.List() {
			revoked := ""
			if p.RevokedAt != nil {
				revoked = p.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Role, p.Name, p.Key, p.ChannelID, revoked)
		}
		return tw.Flush()
	case "create":
		p, secret, err := store.Create(pctx, principals.CreateRequest{Role: principals.Role(*role), Name: *name, ChannelID: *channel})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "id:     %s\nrole:   %s\nkey:    %s\nsecret: %s\n(the secret is shown only now; it is stored hashed)\n", p.ID, p.Role, p.Key, secret)
		return nil
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("principals revoke: give exactly one principal id")
		}
		if err := store.Revoke(pctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintln(out, "revoked", fs.Arg(0))
		return nil
	default:
		fmt.Fprint(out, principalsUsage)
		return fmt.Errorf("principals: unknown subcommand %q", sub)
	}
}

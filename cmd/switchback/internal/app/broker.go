package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Broker is `switchback broker`: the embedded Kafka-protocol broker alone,
// on SWITCHBACK_EMBEDDED_KAFKA_ADDR with its log under
// SWITCHBACK_DATA_DIR/kafka, every topic created, until ctx ends. It lets
// the tiers run as separate processes on one machine (each with
// SWITCHBACK_KAFKA_BROKERS pointing at it) without a Kafka installation.
func Broker(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	log := newLogger(cfg, stderr).With("process", "broker")
	if len(cfg.KafkaBrokers) > 0 {
		return fmt.Errorf("invalid SWITCHBACK_KAFKA_BROKERS: 'switchback broker' runs the embedded broker; unset it")
	}
	dir, err := dataPath(cfg, "kafka")
	if err != nil {
		return err
	}
	// Development only (the tiers apart on one machine): loopback, and the
	// principals topic written by processes of this user alone.
	b, err := kafkabroker.Start(ctx, kafkabroker.Options{Addr: cfg.EmbeddedKafkaAddr, DataDir: dir, Logger: log,
		Protected: []string{schemas.TopicPrincipals}, Trust: kafkabroker.TrustUser})
	if err != nil {
		return fmt.Errorf("embedded Kafka broker on SWITCHBACK_EMBEDDED_KAFKA_ADDR %s: %w", cfg.EmbeddedKafkaAddr, err)
	}
	defer b.Close()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = stream.EnsureTopics(tctx, []string{b.Addr()}, schemas.Topics())
	cancel()
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	fmt.Fprintf(stdout, "Kafka-protocol broker on %s (log under %s); SWITCHBACK_KAFKA_BROKERS=%s for the tiers. Ctrl-C stops it.\n", b.Addr(), dir, b.Addr())
	fmt.Fprintf(stdout, "Development only: loopback, no authentication; %s is written by processes of this user only.\n", schemas.TopicPrincipals)
	log.Info("broker started", "addr", b.Addr(), "dir", dir, "topics", len(schemas.Topics()))
	<-ctx.Done()
	log.Info("broker stopping")
	return nil
}

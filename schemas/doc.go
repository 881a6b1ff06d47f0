// Package schemas holds what every stage agrees on: topic names and their
// settings, the event envelope and every payload written to a topic (each
// with its type names and constructors), and the ClickHouse DDL. It imports
// nothing of the stages; the stages import it.
package schemas

// Package layout holds no code: its test keeps the module's floor plan
// (README.md, "Layout"; docs/decisions.md, "Layout") true for code added
// later, by reading the import graph from `go list`. The arrows point down:
// cmd/ wires the stages (ingest, processors, query, dispatcher), the stages
// use internal/, and bench/ uses everything; nothing under internal/ imports
// a stage, bench/ or cmd/, no stage imports another, and no non-test code
// outside bench/ imports bench/. A second test bounds the length of the
// module's production functions (maxFuncLines), with the longer ones listed
// by name and reason as in docs/decisions.md.
package layout

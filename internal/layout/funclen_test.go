package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"testing"
)

// maxFuncLines is issue 20's bound on a production function ("no function
// over ~80 lines in production code without a written reason"): lines from
// the func keyword to the closing brace, the doc comment left out.
const maxFuncLines = 80

// longFuncs are the production functions over maxFuncLines of today, each
// with the reason it stays whole (the same list and reasons as
// docs/decisions.md, "Layout (issue 20)"). A function split below the
// bound, renamed or removed makes its entry stale and fails the test, so
// the list only shrinks; a new long function needs an entry here and in
// docs/decisions.md, or a split.
var longFuncs = map[string]string{
	// bench/: tools run by hand, not in the binary.
	"bench/e2elatency.step":                               "a bench tool's measured step (not in the binary): load, outage, drain and report in the order they are timed",
	"bench/history.run":                                   "a bench tool's main sequence (not in the binary): servers up, rounds, report",
	"bench/history.runRound":                              "a bench tool's measured round (not in the binary): its phases in the order they are timed",
	"bench/reads.run":                                     "a bench tool's main sequence (not in the binary): binary up, ceiling, rounds per route, report",
	"bench/soak.judge":                                    "a bench tool's verdict (not in the binary): one tolerance check per figure, in a row",
	"bench/soak.measureSlots":                             "a bench tool's measurement script (not in the binary): its steps in the order they are timed",
	"bench/soak.run":                                      "a bench tool's main sequence (not in the binary): servers, load, samples and verdict in order",
	"cmd/switchback/internal/app.Principals":              "a CLI command: one flag set and one case per subcommand",
	"cmd/switchback/internal/app.Run":                     "the process's start and stop sequence, in the order it happens (tiers, readiness, graceful shutdown)",
	"dispatcher.Dispatcher.plan":                          "one pass over an intake batch with the view's reads batched between its loops; its loops share the batch's maps",
	"dispatcher.Dispatcher.runLane":                       "a lane's event loop: heartbeat, writer and sender goroutines share its locals; splitting it needs a lane type (a change of its own)",
	"dispatcher.New":                                      "option checks and defaults, one per option, in a row",
	"dispatcher.newMetrics":                               "a table: one metric definition per entry",
	"dispatcher.view.rebuild":                             "one fold of the deliveries topic into one Redis pipeline; the steps share the pipeline and its flush",
	"ingest/cronsync.Worker.Handle":                       "one request's idempotency cases in order (redelivered, duplicate, stale, run, report), each commented where it happens",
	"ingest/supplierbooking.Router.createHold":            "an all-or-nothing order: every booking made is released on any failure, so the steps share one cleanup",
	"ingest/supplierbooking.Router.tickets":               "the ticket mapping of its doc comment, field by field, with the catalog reads degraded in place",
	"internal/catalog/catalogredis.Store.writeAvailBatch": "the batched write's five numbered phases (locks, reads, checks, publish, apply) share one pipeline, lock set and deferred release; hot path",
	"internal/catalog/catalogredis.availRecordFast":       "a one-pass decoder: one case per key of the wire shape (hot path, fuzzed against encoding/json)",
	"internal/platform/config.Settings":                   "a table: one entry per setting, in documentation order",
	"internal/platform/kafkabroker.Start":                 "option checks and the broker's kfake options, one commented entry each, in order",
	"internal/simulators/bookingsim.Server.book":          "a simulator's createBooking: one check per rule (uuid, product, option, units, slot), then the booking under its lock",
	"internal/simulators/bookingsim.Server.serveTx":       "a simulator's router: one case per route of spec doc 3",
	"internal/simulators/partnersim.Server.ServeHTTP":     "a simulator's handler: fault injection (latency, key, error rate) then spec doc 2's availability route",
	"internal/simulators/partnersim.Server.serveTx":       "a simulator's router: one case per transaction route of spec doc 2",
	"processors/availchange.Processor.HandleBatch":        "the batch's decode, diff, publish and compare-and-set rounds share the batch's decoded records (hot path)",
	"processors/availchange.RebuildState":                 "option defaults, one fold of the availability topic, then chunked writes conditional on the views' marker",
	"processors/bookingchange.Processor.Messages":         "one switch over the spec's hold and booking event types, then their notifications and history",
	"query/octo.Service.render":                           "OCTO's Booking field by field, as the decision \"Selling through OCTO\" lists them",
	"query/octo.Service.reserve":                          "OCTO's reservation: its checks (supplier, body, product, option, units, travellers) then the hold, in order",
}

// funcLen is one function declaration and its length in lines.
type funcLen struct {
	name  string // "<module-relative package path>.<Recv>.<Name>"
	lines int
}

// funcLengths returns every function of f with a body, named within
// package path pkg. A generated file (ast.IsGenerated) has none: its
// length is its generator's business.
func funcLengths(fset *token.FileSet, pkg string, f *ast.File) []funcLen {
	if ast.IsGenerated(f) {
		return nil
	}
	var out []funcLen
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			name = recvName(fn.Recv.List[0].Type) + "." + name
		}
		out = append(out, funcLen{
			name:  pkg + "." + name,
			lines: fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1,
		})
	}
	return out
}

// recvName is the type name of a receiver: T of T, *T, T[P] and *T[P].
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// tooLong returns one line per function over limit without an entry in
// allowed, and per entry of allowed that names no function over limit
// (split, renamed or gone: remove it).
func tooLong(funcs []funcLen, allowed map[string]string, limit int) []string {
	var out []string
	long := map[string]int{}
	for _, f := range funcs {
		if f.lines <= limit {
			continue
		}
		long[f.name] = f.lines
		if _, ok := allowed[f.name]; !ok {
			out = append(out, fmt.Sprintf("%s is %d lines (over %d): split it into named steps, or add it with its reason to longFuncs and docs/decisions.md (Layout)", f.name, f.lines, limit))
		}
	}
	for name, why := range allowed {
		if _, ok := long[name]; !ok {
			out = append(out, fmt.Sprintf("longFuncs entry %s (%s) is stale: no function of that name is over %d lines any more; remove it here and in docs/decisions.md", name, why, limit))
		}
	}
	sort.Strings(out)
	return out
}

func TestTooLong_FlagsUnlistedLongFunctionsAndStaleEntries(t *testing.T) {
	const src = `package p

func short() {
	_ = 1
}

func long() {
	_ = 1
	_ = 2
	_ = 3
	_ = 4
}

type T[P any] struct{}

func (t *T[P]) Long() {
	_ = 1
	_ = 2
	_ = 3
	_ = 4
}
`
	const generated = "// Code generated by hand. DO NOT EDIT.\n\npackage p\n\nfunc gen() {\n\t_ = 1\n\t_ = 2\n\t_ = 3\n\t_ = 4\n}\n"
	fset := token.NewFileSet()
	parse := func(name, src string) []funcLen {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		return funcLengths(fset, "x/p", f)
	}
	funcs := append(parse("p.go", src), parse("gen.go", generated)...)
	got := map[string]int{}
	for _, f := range funcs {
		got[f.name] = f.lines
	}
	if want := map[string]int{"x/p.short": 3, "x/p.long": 6, "x/p.T.Long": 6}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("funcLengths = %v, want %v (the generated file's gen left out)", got, want)
	}

	tests := []struct {
		name    string
		allowed map[string]string
		want    []string // substrings, one per expected line, in sorted order
	}{
		{"unlisted long functions", nil, []string{"x/p.T.Long is 6 lines (over 5)", "x/p.long is 6 lines (over 5)"}},
		{"listed long functions", map[string]string{"x/p.long": "a table", "x/p.T.Long": "a switch"}, nil},
		{"stale entries", map[string]string{"x/p.long": "a table", "x/p.T.Long": "a switch", "x/p.short": "was long", "x/p.gone": "removed"},
			[]string{"longFuncs entry x/p.gone (removed) is stale", "longFuncs entry x/p.short (was long) is stale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLines(t, tooLong(funcs, tt.allowed, 5), tt.want)
		})
	}
}

// moduleFuncs parses every production .go file of the module
// (walkProduction) and returns its functions. It reports how many files
// it parsed.
func moduleFuncs(t *testing.T) ([]funcLen, int) {
	t.Helper()
	fset := token.NewFileSet()
	var funcs []funcLen
	files := 0
	walkProduction(t, func(path, pkg string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		funcs = append(funcs, funcLengths(fset, pkg, f)...)
		return nil
	})
	return funcs, files
}

// TestModule_NoFunctionOverTheBoundWithoutAReason is the function half of
// issue 20's "no package over ~2,000 non-test lines without a written
// reason; no function over ~80 lines in production code without one".
func TestModule_NoFunctionOverTheBoundWithoutAReason(t *testing.T) {
	funcs, files := moduleFuncs(t)
	// The check must see the module, not an empty or partial tree.
	if files < 200 || len(funcs) < 2000 {
		t.Fatalf("parsed %d files with %d functions: the check does not see the module", files, len(funcs))
	}
	for _, v := range tooLong(funcs, longFuncs, maxFuncLines) {
		t.Error(v)
	}
}

// documentedEntry is one function of docs/decisions.md's list of long
// functions: "  - `name`: reason."
var documentedEntry = regexp.MustCompile("(?m)^  - `([^`]+)`: (.*)\\.$")

// TestModule_LongFunctionsAreTheDocumentedOnes keeps longFuncs and the
// list in docs/decisions.md ("Layout (issue 20)") the same, reasons
// included.
func TestModule_LongFunctionsAreTheDocumentedOnes(t *testing.T) {
	list := docList{what: "longFuncs", entry: documentedEntry, format: "  - `%s`: %s.", entries: longFuncs}
	for _, v := range list.mismatches(layoutSection(t)) {
		t.Error(v)
	}
}

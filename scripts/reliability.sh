#!/usr/bin/env bash
# Runs the fault and security tests of issue 9 (docs/reliability.md) over
# the built binary (and the embedded broker's group fault test, which needs
# no binary), and prints the machine-greppable figure lines
# ("RELIABILITY fault=... lost=...") with each test's verdict.
#   scripts/reliability.sh long    (make reliability: every fault test's
#                                   long form, and the security tests)
#   scripts/reliability.sh short   (CI: the fault tests' short forms; the
#                                   security tests already ran in make test)
# The whole verbose output is kept in $RELIABILITY_LOG (default
# bin/reliability-<form>.log); with SWITCHBACK_TEST_LOGDIR set, a failed test
# keeps the whole log of every process it started there.
set -euo pipefail
cd "$(dirname "$0")/.."
form="${1:-short}"
case "$form" in
  short) tests='TestReliability_' ; timeout=20m ;;
  long)  tests='TestReliability_|TestE2E_DispatcherKilledMidRunLosesNothing|TestE2E_SSRF|TestE2E_TenancyMatrix|TestBinary_Secrets|TestBinary_RateLimit|TestBinary_HistoryFlood' ; timeout=120m ;;
  *) echo "usage: $0 short|long" >&2; exit 2 ;;
esac
mkdir -p bin
log="${RELIABILITY_LOG:-bin/reliability-$form.log}"
start=$(date +%s)
set +e
# The embedded broker's own fault test (group members killed mid-rebalance,
# R7) runs first and on its own (-p 1), so that neither load skews the other.
SWITCHBACK_RELIABILITY="$form" go test -race -count=1 -v -p 1 -timeout "$timeout" -run "$tests" ./internal/platform/kafkabroker/ ./cmd/switchback/ >"$log" 2>&1
rc=$?
set -e
grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)|RELIABILITY ' "$log" | sed -E 's/^ +//' || true
echo "reliability ($form): exit $rc in $(( $(date +%s) - start ))s; full output in $log"
exit "$rc"

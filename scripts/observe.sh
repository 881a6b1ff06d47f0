#!/usr/bin/env bash
# make observe: a Prometheus for `make run`, with the alert rules of the
# compose stack and links to the key queries (deploy/prometheus/run.yml,
# run-queries.txt). Grafana is not offered: neither Debian nor npm packages
# a Grafana server, so Prometheus's own graph page stands in (the
# dashboards of deploy/grafana need a Grafana of your own; point its
# datasource at this Prometheus and pick job switchback-run).
#
#   make run        # in one terminal
#   make observe    # in another; Ctrl-C stops Prometheus
#
# PROMETHEUS_ADDR (default 127.0.0.1:9091) is where Prometheus listens;
# SWITCHBACK_OPS_ADDR (default 127.0.0.1:9090) the ops listener it scrapes;
# its data goes under SWITCHBACK_DATA_DIR/prometheus (default ./var).
set -euo pipefail
cd "$(dirname "$0")/.."

addr=${PROMETHEUS_ADDR:-127.0.0.1:9091}
target=${SWITCHBACK_OPS_ADDR:-127.0.0.1:9090}
data=${SWITCHBACK_DATA_DIR:-./var}/prometheus

if ! command -v prometheus >/dev/null 2>&1; then
  echo "prometheus is not installed: 'make deps' installs the Debian package prometheus" >&2
  exit 1
fi

# The config of deploy/prometheus with the ops listener of this run.
mkdir -p "$data"
sed "s/\"127.0.0.1:9090\"/\"$target\"/" deploy/prometheus/run.yml > "$data/run.yml"
cp deploy/prometheus/alerts.yml "$data/alerts.yml"

urlencode() {
  local s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [a-zA-Z0-9.~_-]) out+=$c ;;
      *) out+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  printf '%s' "$out"
}

base="http://$addr/graph?"
all=""
n=0
echo "Prometheus for make run: http://$addr (scraping $target as job switchback-run)"
echo "  alerts   http://$addr/alerts      targets  http://$addr/targets"
echo "  key queries (Prometheus's graph page; Grafana is not packaged by Debian or npm):"
while IFS=$'\t' read -r title query; do
  [[ -z "$title" || "$title" == \#* ]] && continue
  q="g0.expr=$(urlencode "$query")&g0.tab=0&g0.range_input=15m"
  printf '    %-34s %s%s\n' "$title" "$base" "$q"
  all+="${all:+&}g$n.expr=$(urlencode "$query")&g$n.tab=0&g$n.range_input=15m"
  n=$((n + 1))
done < deploy/prometheus/run-queries.txt
echo "  all of them on one page:"
echo "    $base$all"
if ! curl -fsS -o /dev/null "http://$target/healthz" 2>/dev/null; then
  echo "  (nothing answers on $target yet: start 'make run' in another terminal)"
fi
echo
exec prometheus --config.file="$data/run.yml" --storage.tsdb.path="$data/data" \
  --web.listen-address="$addr" --log.level=warn

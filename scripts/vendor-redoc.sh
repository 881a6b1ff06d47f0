#!/usr/bin/env bash
# Vendors the standalone bundle of Redoc (the /docs viewer) from the npm
# registry into query/apidocs/assets, with its licences, and prints the
# hashes to record in query/apidocs/assets/README.md and
# query/apidocs/apidocs_test.go. Usage: scripts/vendor-redoc.sh [version]
set -euo pipefail
version="${1:-2.5.4}"
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$version" >/dev/null && tar xzf "redoc-$version.tgz")
dst=query/apidocs/assets
cp "$tmp/package/bundles/redoc.standalone.js" "$dst/redoc.standalone.js"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dst/redoc.standalone.js.LICENSE.txt"
cp "$tmp/package/LICENSE" "$dst/redoc.LICENSE.txt"
echo "redoc $version vendored into $dst:"
(cd "$dst" && sha256sum redoc.standalone.js redoc.standalone.js.LICENSE.txt redoc.LICENSE.txt)
echo "npm integrity: $(npm view "redoc@$version" dist.integrity)"

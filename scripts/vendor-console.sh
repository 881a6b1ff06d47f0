#!/usr/bin/env bash
# Vendors the web console's front-end libraries (issue 25) from the npm
# registry into query/console/assets/vendor, at the pinned versions below,
# each in a directory named for its version with its licence, unmodified,
# and writes their SHA-256 sums to query/console/assets/vendor/SHA256SUMS
# (checked by query/console's tests, so that an edit or a partial update
# fails). The vendored files are committed: building the binary needs no
# network. npm pack checks each tarball against the registry's integrity.
#   scripts/vendor-console.sh
set -euo pipefail
PREACT=11.2.0 # preact.mjs and hooks.mjs (MIT)
HTM=3.1.1     # tagged templates instead of a JSX build step (Apache-2.0)
UPLOT=1.6.32  # the charts (MIT)
cd "$(dirname "$0")/.."
dst=query/console/assets/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "preact@$PREACT" "htm@$HTM" "uplot@$UPLOT" >/dev/null)
for p in "preact-$PREACT" "htm-$HTM" "uplot-$UPLOT"; do
  mkdir -p "$tmp/$p" && tar xzf "$tmp/$p.tgz" -C "$tmp/$p"
done
rm -rf "$dst"/preact-* "$dst"/htm-* "$dst"/uplot-*
mkdir -p "$dst/preact-$PREACT" "$dst/htm-$HTM" "$dst/uplot-$UPLOT"
src="$tmp/preact-$PREACT/package"
cp "$src/dist/preact.mjs" "$src/dist/preact.mjs.map" "$src/hooks/dist/hooks.mjs" "$src/hooks/dist/hooks.mjs.map" "$src/LICENSE" "$dst/preact-$PREACT/"
src="$tmp/htm-$HTM/package"
cp "$src/dist/htm.mjs" "$src/LICENSE" "$dst/htm-$HTM/"
src="$tmp/uplot-$UPLOT/package"
cp "$src/dist/uPlot.esm.js" "$src/dist/uPlot.min.css" "$src/LICENSE" "$dst/uplot-$UPLOT/"
(cd "$dst" && find preact-* htm-* uplot-* -type f | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
echo "vendored into $dst (preact $PREACT, htm $HTM, uplot $UPLOT):"
cat "$dst/SHA256SUMS"
for p in "preact@$PREACT" "htm@$HTM" "uplot@$UPLOT"; do
  echo "npm integrity of $p: $(npm view "$p" dist.integrity)"
done

#!/usr/bin/env bash
# speedscope-check.sh: do ranksim's Chrome traces load in speedscope (headless Chromium)
# without nesting artefacts?  See doc/viewer-check.md.
#
#   tests/viewer/speedscope-check.sh [--json-only] [--raw-gzip] [--screenshot DIR] TRACE...
#
# Needs node, Debian's chromium (CHROMIUM, default /usr/bin/chromium) and an npm folder
# with speedscope and puppeteer-core (VIEWER_DIR, default /tmp/viewer):
#   apt-get install -y chromium
#   mkdir -p /tmp/viewer && cd /tmp/viewer && npm init -y && npm install speedscope puppeteer-core
# --json-only runs only the JSON-level overlap and gzip checks (node alone).
# No network at run time: everything is served on 127.0.0.1.
# Exit 0 all passed, 1 a failure, 2 usage, 77 skipped (a tool is missing).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export VIEWER_DIR=${VIEWER_DIR:-/tmp/viewer}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

json_only=0
for a in "$@"; do [ "$a" = --json-only ] && json_only=1; done
if [ $# -eq 0 ]; then
    echo "usage: $0 [--json-only] [--raw-gzip] [--screenshot DIR] TRACE..." >&2
    exit 2
fi
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node not found"
    exit 77
fi
if [ $json_only = 0 ]; then
    if [ ! -x "$CHROMIUM" ]; then
        echo "SKIP: no Chromium at $CHROMIUM (apt-get install -y chromium); --json-only checks the JSON alone"
        exit 77
    fi
    for m in speedscope puppeteer-core; do
        if [ ! -d "$VIEWER_DIR/node_modules/$m" ]; then
            echo "SKIP: $VIEWER_DIR/node_modules/$m missing (cd $VIEWER_DIR && npm install speedscope puppeteer-core)"
            exit 77
        fi
    done
fi
# a 1,024-rank trace is ~250 MB of JSON: give node room to parse it
exec nice node --max-old-space-size=8192 "$here/speedscope-check.mjs" "$@"

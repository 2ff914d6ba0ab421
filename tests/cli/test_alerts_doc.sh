#!/bin/sh
# test_alerts_doc: docs/alerts.md is exactly what packaging/genalerts makes
# of the alert kinds' table (orchestrator/base/alert_kinds.def), so the page
# cannot drift from the kinds the code raises. Usage: test_alerts_doc.sh
# SOURCE_DIR GENALERTS
set -u
src=$1
gen=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

"$gen" >"$tmp/alerts.md" || fail "$gen failed"
diff -u "$src/docs/alerts.md" "$tmp/alerts.md" >"$tmp/diff" 2>&1 ||
    fail "docs/alerts.md is not what packaging/genalerts makes of alert_kinds.def (run build/genalerts > docs/alerts.md): $(head -c 2000 "$tmp/diff")"
contains "$tmp/alerts.md" '## parking'
contains "$tmp/alerts.md" '**Clear:**'

[ "$failures" -eq 0 ] || exit 1
echo "ok"

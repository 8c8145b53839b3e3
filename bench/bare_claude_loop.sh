#!/usr/bin/env bash
# The ceiling of the coding-agent benchmark: the same Claude Code invocations assay makes,
# run bare by a shell loop, JOBS at a time, against the same upstream, each row in a fresh
# folder with a fresh home, and as assay starts each one (issue #30: a fair loop): in a
# session of its own (setsid, as assay's start_new_session), with assay's temporary and XDG
# folders inside that home (assay.agents.cli.cli_environment).
# Usage: bare_claude_loop.sh CLAUDE ROWS.jsonl JOBS UPSTREAM_URL
set -euo pipefail
claude=$1 rows=$2 jobs=$3 upstream=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CLAUDE ANTHROPIC_BASE_URL=$upstream ANTHROPIC_API_KEY=bench-key
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
export DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_MAX_RETRIES=0 CLAUDE=$claude WORK=$work
one() {
  local id=$1 text=$2 home="$WORK/$id/home"
  mkdir -p "$WORK/$id/sandbox" "$home/tmp"
  cd "$WORK/$id/sandbox"
  printf "Classify the sentiment of the following text as exactly one word: 'positive' or 'negative'.\nWrite only that single word (lowercase, no punctuation, no other text) to a file named result.txt.\n\nText: \"%s\"\n" "$text" |
    HOME="$home" TMPDIR="$home/tmp" XDG_CONFIG_HOME="$home/.config" \
    XDG_CACHE_HOME="$home/.cache" XDG_DATA_HOME="$home/.local" \
    XDG_STATE_HOME="$home/.local/state" setsid -w "$CLAUDE" -p --output-format stream-json --verbose \
      --permission-mode acceptEdits --setting-sources=project --allowedTools Write \
      --model claude-sonnet-4-5 > "$WORK/$id/out.jsonl"
  test -s result.txt
}
export -f one
source "$(dirname "$0")/rows_loop.sh"
run_rows "$rows" "$jobs"

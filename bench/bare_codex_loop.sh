#!/usr/bin/env bash
# The ceiling of the Codex benchmark: the same Codex invocations assay makes, run bare by a
# shell loop, JOBS at a time, straight at the upstream's Responses wire, each row in a fresh
# folder with a fresh home, started as assay starts each one (issue #30: a fair loop): in a
# session of its own (setsid, as assay's start_new_session), with assay's temporary and XDG
# folders inside that home (assay.agents.cli.cli_environment) and the config.toml assay
# writes (assay.agents.codex.write_config), the prompt on standard input.
# Usage: bare_codex_loop.sh CODEX ROWS.jsonl JOBS UPSTREAM_URL
set -euo pipefail
codex=$1 rows=$2 jobs=$3 upstream=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CODEX=$codex WORK=$work UPSTREAM=$upstream ASSAY_BRIDGE_KEY=bench-key
one() {
  local id=$1 text=$2 home="$WORK/$id/home"
  mkdir -p "$WORK/$id/sandbox" "$home/tmp" "$home/.codex"
  cat > "$home/.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "assay"

[features]
plugins = false

[analytics]
enabled = false

[model_providers.assay]
name = "assay"
base_url = "$UPSTREAM/v1"
wire_api = "responses"
env_key = "ASSAY_BRIDGE_KEY"
request_max_retries = 0
stream_max_retries = 0
TOML
  cd "$WORK/$id/sandbox"
  printf "Classify the sentiment of the following text as exactly one word: 'positive' or 'negative'.\nWrite only that single word (lowercase, no punctuation, no other text) to a file named result.txt.\n\nText: \"%s\"\n" "$text" |
    HOME="$home" TMPDIR="$home/tmp" XDG_CONFIG_HOME="$home/.config" \
    XDG_CACHE_HOME="$home/.cache" XDG_DATA_HOME="$home/.local" \
    XDG_STATE_HOME="$home/.local/state" CODEX_HOME="$home/.codex" setsid -w "$CODEX" exec \
      --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --ephemeral - \
      > "$WORK/$id/out.jsonl"
  test -s result.txt
}
export -f one
source "$(dirname "$0")/rows_loop.sh"
run_rows "$rows" "$jobs"

#!/usr/bin/env bash
# The ceiling of the Gemini CLI, Qwen Code, OpenCode and Pi benchmarks (bench/cli_agents.py):
# the same invocations assay makes, run bare by a shell loop, JOBS at a time, straight at the
# upstream, each row in a fresh folder with a fresh home, started as assay starts each one
# (issue #30: a fair loop): in a session of its own (setsid, as assay's start_new_session),
# with assay's temporary and XDG folders inside that home (assay.agents.cli.cli_environment),
# and each CLI's own files, environment and flags as its assay module writes them
# (assay/agents/gemini.py, qwen.py, opencode.py, pi.py; the task's model is openai/gpt-5.5,
# so the name given to the CLI is gpt-5.5, and gemini-2.5-pro for the Gemini CLI).
# Usage: bare_cli_loop.sh KIND CLI ROWS.jsonl JOBS UPSTREAM_URL   (KIND: gemini, qwen-code,
# opencode or pi)
set -euo pipefail
kind=$1 cli=$2 rows=$3 jobs=$4 upstream=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KIND=$kind CLI=$cli WORK=$work UPSTREAM=$upstream KEY=bench-key
prompt() {
  printf "Classify the sentiment of the following text as exactly one word: 'positive' or 'negative'.\nWrite only that single word (lowercase, no punctuation, no other text) to a file named result.txt.\n\nText: \"%s\"\n" "$1"
}
launch() {  # launch HOME TEXT: the CLI in the current folder, the row's prompt given
  local home=$1 text=$2
  case $KIND in
    gemini)
      mkdir -p "$home/.gemini"
      echo '{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}, "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}' > "$home/.gemini/settings.json"
      GEMINI_API_KEY=$KEY GOOGLE_GEMINI_BASE_URL=$UPSTREAM GEMINI_CLI_NO_RELAUNCH=true \
        setsid -w "$CLI" -p "$(prompt "$text")" --output-format stream-json --yolo \
        -m gemini-2.5-pro < /dev/null ;;
    qwen-code)
      mkdir -p "$home/.qwen"
      echo '{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}' > "$home/.qwen/settings.json"
      prompt "$text" | OPENAI_API_KEY=$KEY OPENAI_BASE_URL=$UPSTREAM/v1 OPENAI_MODEL=gpt-5.5 \
        QWEN_CODE_SUPPRESS_YOLO_WARNING=1 setsid -w "$CLI" --output-format stream-json \
        --auth-type openai --approval-mode yolo --model gpt-5.5 ;;
    opencode)
      local config='{"provider": {"assay": {"npm": "@ai-sdk/openai-compatible", "name": "assay", "options": {"baseURL": "'$UPSTREAM'/v1", "apiKey": "{env:ASSAY_BRIDGE_KEY}"}, "models": {"gpt-5.5": {}}}}, "model": "assay/gpt-5.5", "small_model": "assay/gpt-5.5", "permission": {"*": "allow"}, "agent": {"title": {"disable": true}}, "autoupdate": false, "share": "disabled", "instructions": []}'
      prompt "$text" | OPENCODE_CONFIG_CONTENT=$config ASSAY_BRIDGE_KEY=$KEY \
        OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
        OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 \
        OPENCODE_DISABLE_SHARE=1 setsid -w "$CLI" run --format json -m assay/gpt-5.5 ;;
    pi)
      mkdir -p "$home/.pi/agent"
      echo '{"providers": {"assay": {"baseUrl": "'$UPSTREAM'/v1", "api": "openai-completions", "apiKey": "ASSAY_BRIDGE_KEY", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false}, "models": [{"id": "gpt-5.5"}]}}}' > "$home/.pi/agent/models.json"
      prompt "$text" | ASSAY_BRIDGE_KEY=$KEY PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 \
        PI_TELEMETRY=0 setsid -w "$CLI" -p --mode json --no-session --provider assay \
        --model gpt-5.5 ;;
    *) echo "unknown CLI kind: $KIND" >&2; return 2 ;;
  esac
}
one() {
  local id=$1 text=$2 home="$WORK/$id/home"
  mkdir -p "$WORK/$id/sandbox" "$home/tmp"
  cd "$WORK/$id/sandbox"
  export HOME="$home" TMPDIR="$home/tmp" XDG_CONFIG_HOME="$home/.config" \
    XDG_CACHE_HOME="$home/.cache" XDG_DATA_HOME="$home/.local" \
    XDG_STATE_HOME="$home/.local/state"
  launch "$home" "$text" > "$WORK/$id/out.jsonl"
  test -s result.txt || { echo "row $id wrote no result.txt" >&2; return 1; }
}
export -f prompt launch one
source "$(dirname "$0")/rows_loop.sh"
run_rows "$rows" "$jobs"

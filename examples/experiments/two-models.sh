#!/usr/bin/env bash
# Compare SmolLM2 (local) with a second model on any OpenAI-compatible endpoint, on the same
# SST-2 rows. The second model comes from the environment:
#   ASSAY_SECOND_MODEL   e.g. gpt-4o-mini, or the model name your vLLM/Ollama server serves
#   OPENAI_BASE_URL      the endpoint (omit for api.openai.com)
#   OPENAI_API_KEY       its key (any value for local servers that need none)
# Usage: examples/experiments/two-models.sh [--sample N]   (from the repository root)
set -euo pipefail
if [[ -z "${ASSAY_SECOND_MODEL:-}" ]]; then
  echo "skipped: set ASSAY_SECOND_MODEL (and OPENAI_BASE_URL / OPENAI_API_KEY) to compare" \
       "local/smollm2 with a second model" >&2
  exit 0
fi
if [[ -z "${OPENAI_API_KEY:-}" && -z "${OPENAI_BASE_URL:-}" ]]; then
  echo "skipped: set OPENAI_API_KEY (api.openai.com) or OPENAI_BASE_URL (your server)" >&2
  exit 0
fi
experiment=$(mktemp --suffix=.yaml)
trap 'rm -f "$experiment"' EXIT
cat > "$experiment" <<YAML
experiment_id: two-models
description: "local/smollm2 against openai/${ASSAY_SECOND_MODEL}, same rows, same prompt"
variants:
  - variant_id: smollm2
  - variant_id: second
    agent: {model: "openai/${ASSAY_SECOND_MODEL}"}
YAML
ASSAY=${ASSAY:-.venv/bin/assay}
exec "$ASSAY" run examples/sst2/task.yaml -e "$experiment" --sample "${SAMPLE:-100}" "$@"

# Sourced by the bare loops: run_rows ROWS.jsonl JOBS runs the exported function `one ID TEXT`
# for every row of a JSONL file (its "id" and "text"), JOBS at a time.
run_rows() {
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(r["id"] + "\t" + r["text"])' "$1" |
    xargs -P "$2" -d '\n' -n 1 bash -c 'IFS=$'"'"'\t'"'"' read -r id text <<< "$0"; one "$id" "$text"'
}

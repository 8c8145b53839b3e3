"""The floor of `assay evaluate FILE.jsonl`: read every line of a JSONL file with the standard
library's json, and write every record back out. Usage: python stdlib_jsonl.py IN OUT"""

from __future__ import annotations

import json
import sys


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as reader, open(target, "w", encoding="utf-8") as out:
        for line in reader:
            out.write(json.dumps(json.loads(line), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

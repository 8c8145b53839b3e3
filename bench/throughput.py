"""Model-bound throughput: SST-2 dev (872 rows) on SmolLM2 at -j 4, against the same server.

Three clients send byte-identical ``/v1/completions`` requests to one llama.cpp server that
assay's own launcher starts (4 slots, as ``local/smollm2`` at ``-j 4``):
- the bare asyncio + httpx client (the ceiling, bench/bare_client.py);
- assay (``openai/smollm2`` with ``base_url`` of that server), whole process;
- Inspect AI (``openai-api-completions/xll/smollm2``), whole process, when installed.
Also assay with ``local/smollm2``, which starts its own server (start-up included).
Target (issue 2): assay at least 90% of the bare client's requests/s.
Usage: python bench/throughput.py [CONCURRENCY] [REPEATS]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from common import ASSAY, BENCH, INSPECT_VENV, WORK, rates, save, timed

from assay.providers.local import LocalServer, find_gguf

ROWS = 872


def task_file(model: str, base_url: str | None) -> Path:
    text = (BENCH / "sst2_throughput.yaml").read_text().replace("model: MODEL", f"model: {model}")
    if base_url:
        text = text.replace("  prompt_format:", f"  base_url: {base_url}\n  prompt_format:")
    path = WORK / ("sst2_throughput.yaml" if base_url else "sst2_throughput_local.yaml")
    path.write_text(text)
    return path


def bare(concurrency: int, base_url: str, path: Path) -> float:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bare_client.py"), str(concurrency), base_url, "smollm2",
         str(path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout)["seconds"])


def main(concurrency: int = 4, repeats: int = 3) -> dict[str, object]:
    WORK.mkdir(exist_ok=True)
    server = LocalServer(gguf=find_gguf("smollm2"), alias="smollm2", parallel=concurrency)
    server.start()
    try:
        shared = task_file("openai/smollm2", server.base_url)
        own = task_file("local/smollm2", None)
        inspect = INSPECT_VENV / "bin" / "inspect"
        seconds: dict[str, list[float]] = {"bare": [], "assay": [], "inspect": [],
                                           "assay_local": []}  # fmt: skip
        assay_cmd = [*ASSAY, "run", "-j", str(concurrency), "-q", "--run-dir", "runs"]
        for _ in range(repeats):
            seconds["bare"].append(bare(concurrency, server.base_url, shared))
            seconds["assay"].append(timed([*assay_cmd, str(shared)], cwd=WORK).seconds)
            if inspect.exists():
                env = {"XLL_BASE_URL": server.base_url, "XLL_API_KEY": "none"}
                command = [str(inspect), "eval", "inspect_sst2.py",
                           "--model", "openai-api-completions/xll/smollm2", "--temperature", "0",
                           "--max-tokens", "3", "--max-connections", str(concurrency),
                           "--display", "plain",
                           "--log-dir", str(WORK / "inspect-logs")]  # fmt: skip
                seconds["inspect"].append(timed(command, cwd=BENCH, env=env).seconds)
            seconds["assay_local"].append(timed([*assay_cmd, str(own)], cwd=WORK).seconds)
    finally:
        server.stop()
    result: dict[str, object] = {"rows": ROWS, "concurrency": concurrency, "repeats": repeats}
    result.update(rates(seconds, ROWS))
    save("throughput", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(json.dumps(main(*args), indent=2))

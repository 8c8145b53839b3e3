"""Run every benchmark in one session and print the figures bench/README.md records.

Usage: python bench/run_all.py [REPEATS]     (setup_anchors.sh installs the anchors first)
"""

from __future__ import annotations

import json
import subprocess
import sys

import cli_agents
import coding_agent
import expand
import latency
import llm_agent
import overhead
import qa_evaluate
import throughput
import viewer
from common import BENCH


def main(repeats: int = 3) -> None:
    subprocess.run([str(BENCH / "setup_anchors.sh")], check=True)
    results = {
        "expand": expand.main(100_000, repeats),
        "overhead": overhead.main(500, repeats),
        "throughput": throughput.main(4, repeats),
        "qa_evaluate": qa_evaluate.main(100_000, repeats),
        "latency": latency.main(2000, repeats),
        "coding_agent": coding_agent.main(50, repeats),
        **{
            f"cli_agents_{cli}": cli_agents.main(cli, 48, repeats) for cli in cli_agents.EXECUTABLES
        },
        "llm_agent": llm_agent.main(100, max(repeats, 5)),
        "view": viewer.main(repeats),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))

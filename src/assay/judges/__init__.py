"""Judges: LLM graders as versioned assets, reading their verdicts, and calibrating them
against human labels (docs/judges.md).

- :mod:`.verdict`: one strict JSON object per reply, and the retries that ask again (also
  used by the QA judge);
- :mod:`.assets`: judge files and store judges, resolved to a :class:`JudgeAsset` with
  name, version and content hash;
- :mod:`.prompt` and :mod:`.grade`: the judge's messages, and one case judged (with samples);
- :mod:`.calibration`: a judge against a labelled store dataset;
- :func:`add_judge` (``assay judge add``): a judge file stored as a judge's next version.
  Calibrating one from Python is :func:`assay.api.calibrate_judge`: an agent judge's
  calibration runs the agent, which this layer cannot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

if TYPE_CHECKING:
    from assay.judges.store_verbs import add_judge

__all__ = ["add_judge"]

# imported on first use: the judges' modules import no store (SQLAlchemy) until one is needed
__getattr__ = lazy_exports("assay.judges", {"add_judge": "assay.judges.store_verbs"},
                           keep=globals())  # fmt: skip

"""Judges: LLM graders as versioned assets, reading their verdicts, and calibrating them
against human labels (docs/judges.md).

- :mod:`.verdict`: one strict JSON object per reply, and the retries that ask again (also
  used by the QA judge);
- :mod:`.assets`: judge files and store judges, resolved to a :class:`JudgeAsset` with
  name, version and content hash;
- :mod:`.prompt` and :mod:`.grade`: the judge's messages, and one case judged (with samples);
- :mod:`.calibration`: a judge against a labelled store dataset.
"""

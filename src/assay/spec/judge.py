"""Judges as users write them: a judge file, and the ``llm_judge`` criterion.

A **judge file** (YAML) holds one :class:`JudgeDefinition`::

    name: helpful                       # default: the file's stem
    model: openai/gpt-4o-mini           # any assay model (provider/name)
    rubric: |                           # ${row.x}, ${response}, ${files}, ${transcript}, ${dialog}
      Question: ${row.question}
      Is the answer below helpful and correct?
      ${response}
    verdict: {kind: binary}             # binary | labels (labels, pass_labels, ordered)
                                        #        | scale (min, max, integer)
    few_shot:                           # worked examples, shown before the real case
      - {row: {question: "2+2?"}, response: "4", verdict: true, reason: "correct"}
    samples: 1                          # ask N times: majority (binary, labels) or mean
    temperature: 0
    max_tokens: 300
    retries: 2                          # extra attempts after an unreadable verdict

The ``llm_judge`` criterion (Coder Eval's name and fields, ``reference/coder_eval_agents.md``
§2) either names a judge (★ ``judge: judges/helpful.yaml`` or ``judge: helpful@2`` in the
store) or writes one inline with Coder Eval's ``prompt`` and ``model``. A judge's
``content_hash`` covers what can change a verdict (model, system prompt, rubric, verdict,
few-shot examples, samples, temperature, max_tokens); assay records it, with the judge's name
and version, on every graded row and report.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from assay.spec.base import BaseUrl, StrictModel

DEFAULT_JUDGE_MODEL = "local/smollm2"
JUDGE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
STORE_REFERENCE = re.compile(r"^(?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-]*?)(?:@(?P<version>\d+))?$")
FILE_SUFFIXES = (".yaml", ".yml", ".json")
HASHED_FIELDS = (
    "model",
    "system_prompt",
    "rubric",
    "verdict",
    "few_shot",
    "samples",
    "temperature",
    "max_tokens",
)
"""The fields of a judge its content hash covers: those that can change a verdict."""


RUBRIC_SLOT = r"\$\{(row\.[A-Za-z_][A-Za-z0-9_]*|response|files|transcript|dialog)\}"
"""The placeholders a rubric may hold; ``$${`` writes a literal ``${``."""
_RUBRIC_TOKEN = re.compile(r"\$\$\{|" + RUBRIC_SLOT + r"|\$\{[^}\n]*\}?")
_SLOT_NAMES = ("${row.<field>}", "${response}", "${files}", "${transcript}", "${dialog}")
_SHELL_VARIABLE = re.compile(r"\$\{[A-Z_][A-Z0-9_]*\}")
"""``${HOME}``: a shell variable a rubric about scripts quotes; left as written (as Coder
Eval leaves every ``${…}`` but ``${row.X}``)."""


def check_rubric(text: str) -> str:
    """``text`` when every ``${…}`` in it is a rubric placeholder (:data:`RUBRIC_SLOT`) or
    an upper-case shell variable (``${HOME}``, left as written).

    Raises:
        ValueError: an unknown placeholder (with the closest one), or a ``${`` without its
            ``}``; either would reach the judge as literal text.
    """
    for match in _RUBRIC_TOKEN.finditer(text):
        token = match.group(0)
        if token == "$${" or match.group(1) is not None or _SHELL_VARIABLE.fullmatch(token):
            continue
        if not token.endswith("}"):
            raise ValueError(f"the rubric has {token!r} without its closing '}}': close it, or "
                             "write $${ for a literal ${")  # fmt: skip
        tight = token.replace(" ", "")
        close = [tight] if re.fullmatch(RUBRIC_SLOT, tight) else difflib.get_close_matches(
            tight, ["${response}", "${files}", "${transcript}", "${dialog}"], n=1)  # fmt: skip
        guess = f"did you mean {close[0]}? " if close else ""
        raise ValueError(f"the rubric's placeholder {token} is not one of "
                         f"{', '.join(_SLOT_NAMES)}: {guess}"
                         "(write $${ for a literal ${; an upper-case ${NAME} is left as "
                         "written)")  # fmt: skip
    return text


class VerdictSpec(StrictModel):
    """What the judge answers.

    - ``binary``: ``{"reason": …, "verdict": true|false}``; a row passes on ``true``.
    - ``labels``: ``{"reason": …, "label": one of labels}``; a row passes when the label is
      in ``pass_labels`` (or equals the criterion's ``expected_label``); ``ordered: true``
      says the labels are in order (calibration then adds quadratic-weighted κ).
    - ``scale``: ``{"reason": …, "score": a number from min to max}``; the row's score is
      ``(score − min)/(max − min)``; ``integer`` (default: true when min and max are whole
      numbers at least 2 apart) asks for whole numbers.
    """

    kind: Literal["binary", "labels", "scale"] = "binary"
    labels: list[StrictStr] | None = None
    pass_labels: list[StrictStr] | None = None
    ordered: StrictBool = False
    min: float | None = None
    max: float | None = None
    integer: StrictBool | None = None

    @model_validator(mode="after")
    def _fits_kind(self) -> VerdictSpec:
        if self.kind != "labels" and (self.labels or self.pass_labels or self.ordered):
            raise ValueError(
                f"labels, pass_labels and ordered belong to kind: labels, not kind: {self.kind}"
            )
        if self.kind != "scale" and (
            self.min is not None or self.max is not None or self.integer is not None
        ):
            raise ValueError(f"min, max and integer belong to kind: scale, not kind: {self.kind}")
        if self.kind == "labels":
            _check_labels(self.labels, self.pass_labels)
        if self.kind == "scale":
            if self.min is None or self.max is None:
                raise ValueError("kind: scale needs min and max (e.g. min: 1, max: 5)")
            if not self.min < self.max:
                raise ValueError(f"scale min ({self.min:g}) must be below max ({self.max:g})")
            if self.integer and not (self.min.is_integer() and self.max.is_integer()):
                raise ValueError("an integer scale needs whole-number min and max")
        return self

    @property
    def is_integer(self) -> bool:
        """A scale of whole numbers (explicit, or min and max whole and ≥ 2 apart)."""
        if self.kind != "scale" or self.min is None or self.max is None:
            return False
        if self.integer is not None:
            return self.integer
        return self.min.is_integer() and self.max.is_integer() and self.max - self.min >= 2

    def passes(self, value: bool | str | float) -> bool | None:
        """Whether a verdict passes by the judge alone: binary ``true``, a label among
        ``pass_labels``; ``None`` when the judge does not say (a scale, or labels without
        ``pass_labels``: a criterion's ``expected_label`` or threshold decides)."""
        if self.kind == "binary":
            return value is True
        if self.kind == "labels" and self.pass_labels:
            return value in self.pass_labels
        return None

    @property
    def key(self) -> str:
        """The JSON key of the verdict: ``verdict``, ``label`` or ``score``."""
        return {"binary": "verdict", "labels": "label", "scale": "score"}[self.kind]

    def describe(self) -> str:
        """``binary``, ``labels [a, b, c]`` or ``scale 1..5``."""
        if self.kind == "labels":
            return f"labels [{', '.join(self.labels or [])}]"
        if self.kind == "scale":
            return f"scale {self.min:g}..{self.max:g}" + (" (integers)" if self.is_integer else "")
        return "binary"


def _check_labels(labels: list[str] | None, pass_labels: list[str] | None) -> None:
    if not labels or len(labels) < 2:
        raise ValueError("kind: labels needs at least two labels")
    if len(set(labels)) != len(labels):
        raise ValueError("labels lists a label twice")
    if any(not label.strip() for label in labels):
        raise ValueError("labels has an empty label")
    unknown = [p for p in pass_labels or [] if p not in labels]
    if unknown:
        raise ValueError(f"pass_labels {unknown} are not among labels {labels}")


class FewShotExample(StrictModel):
    """A worked example shown to the judge before the real case: the ``row`` values its
    rubric's ``${row.x}`` take, the ``response`` judged, and the ``verdict`` (a boolean, a
    label or a score, by the verdict kind) with its ``reason``."""

    response: StrictStr
    verdict: bool | StrictStr | float
    reason: StrictStr = ""
    row: dict[str, Any] = Field(default_factory=dict)


class JudgeDefinition(StrictModel):
    """One judge (a judge file, a store judge's content, or an inline ``llm_judge``)."""

    name: StrictStr | None = None
    description: StrictStr = ""
    model: StrictStr = DEFAULT_JUDGE_MODEL
    rubric: StrictStr
    system_prompt: StrictStr | None = None
    verdict: VerdictSpec = Field(default_factory=VerdictSpec)
    few_shot: list[FewShotExample] = Field(default_factory=list)
    samples: int = Field(default=1, ge=1, le=25)
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=300, ge=16, le=32768)
    retries: int = Field(default=2, ge=0, le=10)
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float = Field(default=120, gt=0)
    cache: StrictBool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not JUDGE_NAME.fullmatch(value):
            raise ValueError(f"judge name {value!r} must be letters, digits, '_', '-', '.'")
        return value

    @field_validator("model")
    @classmethod
    def _provider_name(cls, value: str) -> str:
        return provider_model(value)

    @field_validator("rubric")
    @classmethod
    def _rubric(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("rubric is empty: write what the judge should check")
        return check_rubric(value)

    @model_validator(mode="after")
    def _examples_fit(self) -> JudgeDefinition:
        for index, example in enumerate(self.few_shot):
            problem = verdict_problem(self.verdict, example.verdict)
            if problem is not None:
                raise ValueError(f"few_shot[{index}].verdict: {problem}")
        return self

    def content(self) -> dict[str, Any]:
        """The hashed fields, as JSON data."""
        data = self.model_dump(mode="json", include=set(HASHED_FIELDS))
        data["verdict"] = self.verdict.model_dump(mode="json", exclude_defaults=True)
        return data

    def content_hash(self) -> str:
        """sha256 (64 hex digits) of :meth:`content` as canonical JSON (sorted keys)."""
        text = json.dumps(
            self.content(),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def provider_model(value: str) -> str:
    """``provider/name``; Coder Eval's ``anthropic.<model>`` is read as ``anthropic/<model>``.

    Raises:
        ValueError: not ``provider/name``.
    """
    if "/" not in value and value.startswith("anthropic.") and len(value) > len("anthropic."):
        return "anthropic/" + value.removeprefix("anthropic.")
    if "/" not in value:
        raise ValueError(
            f"model '{value}' must be named provider/name, e.g. local/smollm2, "
            "openai/gpt-4o-mini, mock/judge.yaml"
        )
    return value


def verdict_problem(spec: VerdictSpec, value: Any) -> str | None:
    """Why ``value`` is not a verdict of ``spec``'s kind (``None`` when it is one)."""
    if spec.kind == "binary":
        return None if isinstance(value, bool) else f"{value!r} is not true or false"
    if spec.kind == "labels":
        labels = spec.labels or []
        return None if value in labels else f"{value!r} is not one of the labels {labels}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    assert spec.min is not None and spec.max is not None
    if not spec.min <= value <= spec.max:
        return f"{value:g} is outside the scale {spec.min:g}..{spec.max:g}"
    return None


class CalibrationRef(StrictModel):
    """The stored calibration a resolved judge carries (what a binary judge's corrected pass
    rate rests on): its id, the dataset version it measured, and the counts behind the
    judge's sensitivity ``tp/positives`` and specificity ``tn/negatives``."""

    calibration_id: StrictStr
    dataset: StrictStr
    dataset_version: int
    label_field: StrictStr
    created_at: StrictStr
    rows: int
    agreement: float | None = None
    kappa: float | None = None
    tp: int | None = None
    positives: int | None = None
    tn: int | None = None
    negatives: int | None = None


class JudgeAsset(StrictModel):
    """A judge as a run uses it, resolved once when the run is planned: its definition, its
    name, version (``None`` outside the store), content hash, where it came from
    (``file:PATH``, ``store:NAME@N`` or ``inline``), the folder a ``mock/`` script's path is
    relative to, and its latest stored calibration (if any)."""

    definition: JudgeDefinition
    name: StrictStr
    version: int | None = None
    content_hash: StrictStr
    source: StrictStr
    base_dir: StrictStr = "."
    calibration: CalibrationRef | None = None

    @property
    def label(self) -> str:
        """``name@version`` (``name`` without a version) and the hash's first 12 digits."""
        version = f"@{self.version}" if self.version is not None else ""
        return f"{self.name}{version} (sha256 {self.content_hash[:12]})"


CALIBRATION_PIN = re.compile(r"[0-9a-f]{4,32}")


def split_calibration_pin(value: str) -> tuple[str, str | None]:
    """A ``judge:`` value and the calibration it pins: ``grader@2#1a2b3c4d`` →
    ``("grader@2", "1a2b3c4d")`` (a prefix of a stored calibration's id, as ``assay judge
    show`` lists them); without ``#``: ``(value, None)``.

    Raises:
        ValueError: what follows ``#`` is not 4 to 32 lowercase hex digits.
    """
    text = value.strip()
    if "#" not in text:
        return text, None
    reference, pin = text.rsplit("#", 1)
    if not CALIBRATION_PIN.fullmatch(pin.strip()):
        raise ValueError(
            f"judge {value!r}: '#{pin}' is not a calibration id; pin one with '#' and 4 to 32 "
            "hex digits of its id (`assay judge show NAME` lists a judge's calibrations)"
        )
    return reference.strip(), pin.strip()


def judge_reference(value: str) -> tuple[str, str, int | None]:
    """Classify a ``judge:`` value (a calibration pin ``#ID`` is left out, see
    :func:`split_calibration_pin`): ``("file", path, None)`` for a file (a path with ``/``
    or a ``.yaml``/``.yml``/``.json`` name), else ``("store", name, version)``.

    Raises:
        ValueError: neither a file name nor ``name[@N]``, or a malformed pin.
    """
    text, _ = split_calibration_pin(value)
    if "/" in text or "\\" in text or text.lower().endswith(FILE_SUFFIXES):
        return "file", text, None
    match = STORE_REFERENCE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"judge {value!r} is neither a judge file (judges/x.yaml) nor a "
            "store judge (name or name@N)"
        )
    version = match.group("version")
    return "store", match.group("name"), int(version) if version else None


BASE_JUDGE_METRICS = ("pass_rate",)
SCALE_METRICS = (
    "verdict_mean",
    "verdict_median",
    "verdict_std",
    "verdict_min",
    "verdict_max",
    "sample_spread",
)
CLASSIFICATION_METRICS = ("accuracy", "macro_f1", "weighted_f1", "micro_f1")


def judge_metric_names(verdict: VerdictSpec, *, expected_label: bool) -> set[str]:
    """The suite metrics an ``llm_judge`` with this verdict adds to the base ones
    (``assay.criteria.judge``): ``pass_rate``; binary ``corrected_pass_rate`` and
    ``self_agreement``; labels ``share.<label>`` and ``self_agreement`` (with
    ``expected_label`` the classification metrics); scale ``verdict_*`` and
    ``sample_spread``."""
    names = set(BASE_JUDGE_METRICS)
    if verdict.kind == "binary":
        return names | {"corrected_pass_rate", "self_agreement"}
    if verdict.kind == "scale":
        return names | set(SCALE_METRICS)
    labels = list(verdict.labels or [])
    names |= {"self_agreement", *(f"share.{label}" for label in labels)}
    if expected_label:
        names |= set(CLASSIFICATION_METRICS)
        names |= {f"{kind}.{label}" for kind in ("precision", "recall", "f1") for label in labels}
    return names

"""The local server's context: what the model was trained for by default, settable with
``ASSAY_LOCAL_MODEL_CONTEXT``; a request that still does not fit is an error naming both sizes
and the setting (issue 30 item 4: Claude Code's first request is 4,232 tokens)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.errors import ModelError, UsageError
from assay.providers.base import Message, ModelRequest
from assay.providers.local import (
    CONTEXT_VARIABLE,
    FALLBACK_CONTEXT,
    THREADS_VARIABLE,
    URL_VARIABLE,
    LocalModel,
    context_per_slot,
    decode_threads,
    find_gguf,
    trained_context,
)

SMOLLM2_TRAINED = 8192  # SmolLM2's model card: "context length 8192"


def test_the_trained_context_comes_from_the_gguf_file() -> None:
    assert trained_context(find_gguf("smollm2")) == SMOLLM2_TRAINED


def test_a_file_that_is_no_gguf_has_no_trained_context(tmp_path: Path) -> None:
    fake = tmp_path / "x.gguf"
    fake.write_bytes(b"not a gguf file at all" * 10)
    assert trained_context(fake) is None
    assert trained_context(tmp_path / "missing.gguf") is None


def test_the_context_per_slot_defaults_to_training_and_can_be_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CONTEXT_VARIABLE, raising=False)
    assert context_per_slot(find_gguf("smollm2")) == SMOLLM2_TRAINED
    fake = tmp_path / "x.gguf"
    fake.write_bytes(b"")
    assert context_per_slot(fake) == FALLBACK_CONTEXT
    monkeypatch.setenv(CONTEXT_VARIABLE, "4096")
    assert context_per_slot(find_gguf("smollm2")) == 4096


def test_the_decoding_threads_default_to_one_per_core_and_can_be_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    assert decode_threads() == 0  # llama.cpp: one per core
    monkeypatch.setenv(THREADS_VARIABLE, " ")
    assert decode_threads() == 0
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    assert decode_threads() == 3


BAD_SETTINGS = [  # (variable, value): each whole-number setting of the local server
    *((CONTEXT_VARIABLE, v) for v in ("abc", "0", "-5", "12.5", "64", "8k", "\u00b2\u00b2\u00b2",
                                      "2097152")),
    *((THREADS_VARIABLE, v) for v in ("abc", "0", "-1", "1.5", "two", "\u00b2", "\u0661", "1025",
                                      "99999999999999999999")),
]  # fmt: skip
MEANS = {CONTEXT_VARIABLE: ("a context size", "from 128 to 1,048,576"),
         THREADS_VARIABLE: ("a number of threads", "from 1 to 1,024")}  # fmt: skip


@pytest.mark.parametrize(("variable", "value"), BAD_SETTINGS)
def test_a_bad_setting_is_a_usage_error_naming_the_variable_and_the_range(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UsageError) as caught:
        context_per_slot(find_gguf("smollm2")) if variable == CONTEXT_VARIABLE else decode_threads()
    what, bounds = MEANS[variable]
    assert f"{variable}={value!r} is not {what}" in str(caught.value)
    assert bounds in (caught.value.hint or "")


@pytest.mark.local_model(own_server=True)
def test_a_run_starts_its_server_with_the_threads_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variable reaches the server a run starts (its command line), not only the
    parser; a bad value stops the model's start with the variable's error."""
    import assay

    monkeypatch.setenv(THREADS_VARIABLE, "1")
    task = tmp_path / "task.yaml"
    task.write_text(
        "task_id: t\ndescription: d\nagent: {type: llm, model: local/smollm2, max_tokens: 2}\n"
        "initial_prompt: Say hi.\nsuccess_criteria: [{type: file_check, includes: [x], "
        "description: any}]\n"
    )
    monkeypatch.setattr("assay.providers.local.LocalServer.start", _recording_start(seen := []))
    result = assay.run(task, run_dir=tmp_path / "runs")
    assert seen == [1] and result.exit_code in (0, 1)
    monkeypatch.setenv(THREADS_VARIABLE, "many")
    with pytest.raises(UsageError, match=THREADS_VARIABLE):
        assay.run(task, run_dir=tmp_path / "runs2")


def _recording_start(seen: list[int]) -> object:
    from assay.providers.local import LocalServer

    real = LocalServer.start

    def start(self: LocalServer) -> None:
        seen.append(self.threads)
        real(self)

    return start


def _ask(prompt: str) -> str:
    async def go() -> str:
        model = LocalModel(name="local/smollm2", parallel=1)
        try:
            await model.start()
            request = ModelRequest(messages=(Message("user", prompt),), max_tokens=4)
            return (await model.generate(request)).text
        finally:
            await model.aclose()

    return asyncio.run(go())


# about 2,300 tokens: over the 2,048 that every slot had before, and no longer than needed
# (the CPU reads the whole prompt before the first token)
LONG_PROMPT = "Summarise the following notes. " + "The river ran past the mill. " * 360


@pytest.mark.local_model(own_server=True)
def test_a_prompt_over_two_thousand_tokens_fits_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONTEXT_VARIABLE, raising=False)
    assert isinstance(_ask(LONG_PROMPT), str)  # refused at 2,048 before


@pytest.mark.local_model(own_server=True)
def test_a_prompt_over_the_context_names_both_sizes_and_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CONTEXT_VARIABLE, "512")
    with pytest.raises(ModelError) as caught:
        _ask(LONG_PROMPT)
    text = str(caught.value)
    assert "is 512 tokens a slot" in text and CONTEXT_VARIABLE in text
    assert f"trained for {SMOLLM2_TRAINED}" in text
    prompt_tokens = int(text.split("the request is ")[1].split(" tokens")[0])
    assert prompt_tokens > 2048


@pytest.mark.local_model
def test_a_server_that_already_runs_is_named_as_what_to_restart() -> None:
    """The shared test server is reached through ``ASSAY_LOCAL_MODEL_URL`` at 2,048 tokens a
    slot: assay did not start it, so the fix is that server's context, not the variable."""
    with pytest.raises(ModelError) as caught:
        _ask(LONG_PROMPT)
    text = str(caught.value)
    assert "is 2048 tokens a slot" in text
    assert f"start the server that {URL_VARIABLE} names with a larger context" in text
    assert CONTEXT_VARIABLE not in text

"""Credentials in URLs: a model ``base_url`` (or a store URL, or any variable) with a key in
its query string or as userinfo is redacted wherever assay's redaction applies, by one rule
(:func:`assay.results.secrets.url_secrets`), and the secret scan finds such URLs left in
clear; ordinary run content (content hashes, uuids, URLs without credentials) is left
alone."""

from __future__ import annotations

import hashlib
import json
import uuid
from urllib.parse import urlsplit

import pytest

from assay.results.secret_scan import scan_buffer
from assay.results.secrets import Redactor, url_secrets

TOKEN = "glpat-Zx81kQ2wL0pR7mN4bV6c"
SHAPES = [
    (f"https://example-llm.internal/v1?api-key={TOKEN}", [TOKEN]),
    (f"https://example-llm.internal/v1?key={TOKEN}&alt=json", [TOKEN]),
    (f"https://fn.azurewebsites.net/api/chat?code={TOKEN}", [TOKEN]),
    ("https://acct.blob.core.windows.net/c?sv=2022-11-02&se=2030-01-01&sp=r"
     "&sig=Qm9vT3J4a0wybkE5ZEZ2S1dZ%2Bc%3D", ["Qm9vT3J4a0wybkE5ZEZ2S1dZ%2Bc%3D",
                                             "Qm9vT3J4a0wybkE5ZEZ2S1dZ+c="]),
    (f"https://{TOKEN}@llm.example/v1", [TOKEN]),
    (f"https://alice:{TOKEN}@llm.example/v1", [TOKEN]),
    (f"wss://relay.example/socket?token={TOKEN}", [TOKEN]),
]  # fmt: skip


@pytest.mark.parametrize(("url", "secrets"), SHAPES)
def test_every_url_shape_yields_its_secret(url: str, secrets: list[str]) -> None:
    found = url_secrets(f"base: {url} end")
    for secret in secrets:
        assert secret in found
    assert "2022-11-02" not in found and "llm.example" not in found  # settings, hosts
    assert "alice" not in found  # the user of a user:password pair is no secret


@pytest.mark.parametrize(("url", "secrets"), SHAPES)
def test_a_base_url_is_written_redacted_and_its_secret_never_in_clear(
    url: str, secrets: list[str]
) -> None:
    redactor = Redactor()
    redactor.add_variable("base_url", url)
    record = json.dumps({"agent": {"base_url": url, "model": "m"}})
    written = redactor.redact(record)
    assert all(secret not in written for secret in secrets), written
    assert "[redacted:base_url]" in written
    assert f"{urlsplit(url).hostname}/" in written  # the host stays readable
    assert redactor.names == frozenset()  # the variable itself is not withheld


@pytest.mark.parametrize(
    "name", ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ASSAY_STORE", "UPSTREAM"]
)
def test_url_secrets_in_any_variable_are_redacted(name: str) -> None:
    redactor = Redactor.from_environment({name: f"https://{TOKEN}@h.example/v1?key=Zk3mQ9pL2xR8"})
    out = redactor.redact(f"{TOKEN} and Zk3mQ9pL2xR8")
    assert out == f"[redacted:{name}] and [redacted:{name}]"


@pytest.mark.parametrize(("url", "secrets"), SHAPES)
def test_the_scan_finds_a_url_with_credentials_left_in_clear(url: str, secrets: list[str]) -> None:
    data = f'{{\n  "base_url": "{url}"\n}}\n'.encode()
    found = scan_buffer(data, Redactor())
    assert found and all(line == 2 for line, _ in found), found
    assert any("URL" in kind for _, kind in found)
    assert all(secret.encode() not in kind.encode() for _, kind in found for secret in secrets)


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/x?page=2&sort=score",
        "https://api.example/v1?api-version=2024-02-01",
        "https://[redacted:base_url]@host/v1?key=[redacted:base_url]",
        "postgresql://postgres@localhost/assay?sslmode=require",
        "mailto:someone@example.com",
        f"sha256:{hashlib.sha256(b'row').hexdigest()}",
        str(uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)),
        '"content_hash": "' + hashlib.sha256(b"dataset").hexdigest() + '"',
    ],
)
def test_ordinary_run_content_is_no_finding_and_no_url_secret(text: str) -> None:
    assert scan_buffer(f"x {text} y\n".encode(), Redactor()) == []
    redactor = Redactor()
    redactor.add_variable("base_url", text)
    assert redactor.redact(text) == text


def test_a_run_redacts_the_url_secrets_of_agents_judges_and_the_store() -> None:
    from assay.api.tasks import TaskDefinition
    from assay.orchestration.loading.secrets import run_redactor

    task = TaskDefinition.model_validate({
        "task_id": "t", "description": "d", "initial_prompt": "p",
        "agent": {"type": "llm", "model": "openai/gpt-4.1",
                  "base_url": "https://llm.example/v1?api-key=AgentKey0123456"},
        "success_criteria": [{"type": "llm_judge", "description": "j", "prompt": "ok?",
                              "model": "openai/gpt-4.1",
                              "base_url": "https://JudgeTok3n9876@judge.example/v1"}],
    })  # fmt: skip
    store = "https://store.example/db?sig=StoreSig4567xyz"
    redactor = run_redactor([task], {}, store_url=store)
    out = redactor.redact("AgentKey0123456 JudgeTok3n9876 StoreSig4567xyz")
    assert out == "[redacted:base_url] [redacted:base_url] [redacted:ASSAY_STORE]"

"""The Ray tests' variables are set for them alone: ``RAY_AUTH_TOKEN_PATH`` is secret-named,
and a run that a later test started on the same xdist worker withheld it (and said so)."""

from __future__ import annotations

import os

import pytest

from tests.executors.conftest import ray_environment

SETTINGS = {"RAY_TMPDIR": "/tmp/r", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/tmp/r/t"}


OUTSIDE = [{}, {"RAY_ADDRESS": "10.0.0.1:6379"}, {"RAY_TMPDIR": "/var/tmp", "RAY_AUTH_MODE": "off"}]


@pytest.mark.parametrize("outside", OUTSIDE)
def test_the_clusters_variables_hold_inside_and_what_was_there_comes_back(
    outside: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*SETTINGS, "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in outside.items():
        monkeypatch.setenv(name, value)
    before = dict(os.environ)
    with ray_environment(SETTINGS):
        assert {name: os.environ.get(name) for name in SETTINGS} == SETTINGS
        assert "RAY_ADDRESS" not in os.environ
    assert dict(os.environ) == before

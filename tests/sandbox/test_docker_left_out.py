"""Where no container engine answers, the ``docker`` tests are left out with one message
that says what is missing and how to get it, never silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docker_images import make_test_image


@pytest.mark.parametrize("kind", [None, "docker", "podman"])
def test_without_an_engine_the_docker_tests_say_what_was_left_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str | None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker, no podman
    found = make_test_image(kind)
    assert isinstance(found, str)
    assert found.startswith("docker driver tests left out: sandbox.driver docker needs a "
                            "container engine")  # fmt: skip
    assert "is not installed" in found and "apt-get install docker.io mmdebstrap" in found


def test_a_daemon_that_does_not_answer_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = make_test_image("docker")
    assert isinstance(found, str)
    assert "its daemon does not answer (Cannot connect to the Docker daemon)" in found

"""Shared fixtures: a scratch working directory, readable temporary folders and one real
local model server per test process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """Run the test inside an empty temporary folder (runs/ lands there)."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.fixture(scope="session", autouse=True)
def _readable_temp_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """pytest makes its temporary folders ``0700``. Rows of a ``bwrap`` task run, when the
    tests run as root, as an unprivileged user of their own, which must read the task's
    folder (assay refuses the plan otherwise, see tests/sandbox/test_bwrap.py): every
    temporary folder of the tests is made ``0755``, as a checkout normally is."""
    made = tmp_path_factory.mktemp

    def mktemp(basename: str, numbered: bool = True) -> Path:
        path = made(basename, numbered)
        path.chmod(0o755)
        return path

    tmp_path_factory.mktemp = mktemp  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def local_model_url() -> Iterator[str]:
    """One real SmolLM2 server (llama.cpp on 127.0.0.1) for this test process, started on
    first use; its ``/v1`` URL. The runs of the tests marked ``local_model`` use it through
    ``ASSAY_LOCAL_MODEL_URL`` instead of loading the weights into a server of their own;
    :data:`LOCAL_MODEL_SLOTS` slots serve a run's ``-j`` (more requests wait for a slot).

    Under xdist it decodes on one thread: llama.cpp's threads wait for each other at every
    token, and on cores that the other workers keep busy a second thread made a 2 s judge
    test take minutes."""
    from assay.providers.local import LocalServer, find_gguf

    threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 0
    server = LocalServer(
        gguf=find_gguf("smollm2"),
        alias="smollm2",
        parallel=LOCAL_MODEL_SLOTS,
        threads=threads,
        ctx_per_slot=2048,  # the tests' prompts are short; a worker's memory stays small
    )
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()


LOCAL_MODEL_SLOTS = 4  # a run's default -j


@pytest.fixture(autouse=True)
def _shared_local_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``local_model`` runs its models against the process's shared server
    (:func:`local_model_url`); one marked ``local_model(own_server=True)`` (a test of the
    server's own start and stop) lets each run start its own, as users' runs do, decoding on
    one thread under xdist (``ASSAY_LOCAL_MODEL_THREADS``, for the reason the shared server
    does)."""
    marker = request.node.get_closest_marker("local_model")
    if marker is None:
        return
    if marker.kwargs.get("own_server"):
        if os.environ.get("PYTEST_XDIST_WORKER"):  # one decoding thread, as the shared server
            monkeypatch.setenv("ASSAY_LOCAL_MODEL_THREADS", "1")
        return
    monkeypatch.setenv("ASSAY_LOCAL_MODEL_URL", request.getfixturevalue("local_model_url"))


@pytest.fixture(scope="session")
def docker_image() -> tuple[object, str]:
    """``(engine, tag)`` of the ``docker`` driver tests' image (:mod:`tests.docker_images`),
    made once per session; the test is skipped with what was left out where it cannot be."""
    from tests.docker_images import make_test_image

    found = make_test_image("docker")
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def podman_image() -> tuple[object, str]:
    """``(engine, tag)`` as :func:`docker_image`, on Podman."""
    from tests.docker_images import make_test_image

    found = make_test_image("podman")
    if isinstance(found, str):
        pytest.skip(found)
    return found


RAY_MODULES = "tests/executors/test_ray_"
"""The test modules of the ``ray`` executor: one work unit under ``--dist loadscope``."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadscope`` (the Makefile's), the Ray modules are one work unit that
    goes out first: one worker starts the 3-node cluster once, and stops it when its last
    Ray test is done (the fixture is the package's), instead of up to three workers keeping
    a cluster each until the session ends (one idle cluster costs about 2 s of CPU a minute
    on this 2-core machine, its start 10-20 s). pytest-xdist's ``--dist loadgroup`` would
    group them too, but with pytest 9 it groups nothing (pytest-xdist issue #1386)."""
    if config.getoption("dist", None) != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RayFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return RAY_MODULES if nodeid.startswith(RAY_MODULES) else super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if RAY_MODULES in self.workqueue:
                self.workqueue.move_to_end(RAY_MODULES, last=False)
            super()._assign_work_unit(node)

    return RayFirst(config, log)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line for the ``docker`` tests a session left out, and why (each test's own skip
    line says it too)."""
    from tests.docker_images import LEFT_OUT

    marker = LEFT_OUT.split("{")[0]
    reasons = [str(getattr(r, "longrepr", "")) for r in terminalreporter.stats.get("skipped", [])]
    left_out = [r for r in reasons if marker in r]
    if left_out:
        reason = left_out[0][left_out[0].index(marker) :].rstrip("')\"")
        terminalreporter.write_line(f"{len(left_out)} docker tests skipped: {reason}")

"""A real Ray cluster of several nodes on this machine, for the ``ray`` executor's tests.

One cluster per test process (``ray.cluster_utils.Cluster``: a head and two worker nodes,
every one on 127.0.0.1), with its own ``RAY_TMPDIR`` and its own authentication token, so
nothing touches another Ray instance or the user's home. Node health is checked every second
so a killed node is declared dead in about 5 s instead of 12-14 (not faster: on two busy
cores a healthy raylet can miss a few heartbeats). Tests that remove or add
nodes put the cluster back as they found it (:func:`restore_nodes`).

Everything stays on 127.0.0.1: Ray turns a loopback address into the machine's own address
unless it is told it runs a single-machine cluster (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
read when Ray is imported, so it is set here, before any test imports it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

from assay.orchestration.running.executors.ray_cluster import reload_auth

WORKERS = 2
SYSTEM_CONFIG = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 5,
}


@dataclass
class RayCluster:
    """The cluster: its address, its ``Cluster`` object and the worker nodes it has."""

    address: str
    cluster: Any
    workers: list[Any] = field(default_factory=list)
    token_path: str = ""
    settings: dict[str, str] = field(default_factory=dict)

    def add_worker(self, **env: str) -> Any:
        """Start one more worker node; ``env`` changes its environment (e.g. ``PATH``)."""
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            node = self.cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self.workers.append(node)
        self.cluster.wait_for_nodes(timeout=60)
        return node

    def remove_worker(self, node: Any) -> None:
        """Kill a worker node (its raylet and every process of it), and wait until the
        cluster has declared it dead (so the next run does not count on it)."""
        self.workers.remove(node)
        self.cluster.remove_node(node, allow_graceful=False)
        self.cluster.wait_for_nodes(timeout=60)

    def alive_nodes(self) -> int:
        import ray

        return sum(1 for n in ray.nodes() if n.get("Alive"))


RAY_VARIABLES = ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


@contextlib.contextmanager
def ray_environment(settings: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with the cluster's Ray variables (``RAY_ADDRESS`` unset) inside, and as
    it was outside, so that no other test sees them: ``RAY_AUTH_TOKEN_PATH`` is
    secret-named, and a run started by a test that came after a Ray test withheld it."""
    saved = {name: os.environ.get(name) for name in RAY_VARIABLES}
    os.environ.pop("RAY_ADDRESS", None)
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="package")
def ray_session() -> Iterator[RayCluster]:
    """The cluster, started once for this folder's tests in a test process (the Ray
    modules are one work unit under xdist: tests/conftest.py), stopped after the last of
    them, with its Ray variables set only while it starts, stops, and a test uses it
    (:func:`ray_cluster`)."""
    folder = tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp")  # short: Ray's socket paths
    token = os.path.join(folder, "token")
    with open(token, "w") as handle:
        handle.write("assay-test-token-" + "0" * 32)
    settings = {"RAY_TMPDIR": folder, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token}
    with ray_environment(settings):
        from ray.cluster_utils import Cluster  # Ray is installed by `make install-dev`

        reload_auth()  # Ray reads its token settings once per process

        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "node_ip_address": "127.0.0.1",
            "_system_config": SYSTEM_CONFIG,
        })  # fmt: skip
        found = RayCluster(cluster.address, cluster, token_path=token, settings=settings)
        for _ in range(WORKERS):
            found.add_worker()
    try:
        yield found
    finally:
        with ray_environment(settings):
            cluster.shutdown()
        reload_auth()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def ray_cluster(ray_session: RayCluster) -> Iterator[RayCluster]:
    """The session's cluster, its Ray variables set for this test alone."""
    with ray_environment(ray_session.settings):
        yield ray_session


@pytest.fixture
def restore_nodes(ray_cluster: RayCluster) -> Iterator[RayCluster]:
    """The cluster; afterwards, as many worker nodes as before."""
    before = len(ray_cluster.workers)
    yield ray_cluster
    while len(ray_cluster.workers) > before:
        ray_cluster.remove_worker(ray_cluster.workers[-1])
    while len(ray_cluster.workers) < before:
        ray_cluster.add_worker()

"""The image the ``docker`` driver's tests run in, made offline: a minimal Debian with
Python and pytest, built once from Debian's packages by ``mmdebstrap`` (about a minute),
kept in ``.cache/images/`` (git-ignored) and imported into the engine (``docker import``)
when the engine does not hold it yet. Where no engine answers, or it does not hold the image
and ``mmdebstrap`` is missing, the tests that need it are skipped with one message saying
what was left out and how to get it."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from assay.errors import UsageError
from assay.sandbox.docker import Engine, find_engine, has_image

PACKAGES = ("python3", "python3-pytest", "nodejs")
SUITE = "bookworm"
RECIPE = f"mmdebstrap --variant=minbase --include={','.join(PACKAGES)} {SUITE}"
TAG = "assay-test/debian-py:" + hashlib.sha256(RECIPE.encode()).hexdigest()[:12]
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "images"
LEFT_OUT = (
    "docker driver tests left out: {why}. To run them: apt-get install docker.io mmdebstrap, "
    "start dockerd (.ci/run does: its own data root, --iptables=false --bridge=none) and "
    "export DOCKER_HOST"
)


def make_test_image(kind: str | None = None) -> tuple[Engine, str] | str:
    """The engine (``kind``, or the first that answers) and the tag of the tests' image in
    it, or why they cannot run (a message)."""
    try:
        engine = find_engine(kind)
    except UsageError as exc:
        return LEFT_OUT.format(why=exc.message)
    if has_image(engine, TAG):
        return engine, TAG
    CACHE.mkdir(parents=True, exist_ok=True)
    # one test process at a time builds and imports: xdist's workers each ask for the image
    # in their first docker test, and two mmdebstrap runs writing one tarball (or an import
    # reading it while another writes) left an engine a broken image of a few bytes
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_and_import(engine)


def _build_and_import(engine: Engine) -> tuple[Engine, str] | str:
    if has_image(engine, TAG):  # another test process imported it while this one waited
        return engine, TAG
    rootfs = CACHE / (TAG.split(":")[1] + ".tar")
    if not rootfs.exists():
        if shutil.which("mmdebstrap") is None:
            return LEFT_OUT.format(why=f"{engine.kind} has no image {TAG} and mmdebstrap "
                                   "is not installed to build it")  # fmt: skip
        partial = rootfs.with_name("partial-" + rootfs.name)  # .tar: mmdebstrap writes a tarball
        done = subprocess.run([*RECIPE.split(), str(partial)], capture_output=True,
                              text=True, timeout=1200, check=False)  # fmt: skip
        if done.returncode != 0:
            return LEFT_OUT.format(why="mmdebstrap failed: " + done.stderr.strip()[-500:])
        partial.rename(rootfs)
    imported = engine.run("import", str(rootfs), TAG, timeout=600)
    if imported.returncode != 0:
        return LEFT_OUT.format(why=f"{engine.kind} import failed: {imported.stderr.strip()}")
    return engine, TAG

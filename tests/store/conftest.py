"""Store fixtures: every store test runs on a real SQLite file and on a real PostgreSQL.

PostgreSQL comes from ``ASSAY_TEST_POSTGRES_URL`` (``.ci/run`` starts a local server and sets
it); each test gets a fresh PostgreSQL schema (``search_path``), dropped afterwards. Without
the variable the PostgreSQL cases are skipped, with the reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from assay.store import Store, open_store
from assay.store.engine import resolve_url

POSTGRES_ENV = "ASSAY_TEST_POSTGRES_URL"
FIXTURES = Path(__file__).parent / "fixtures"
# the PostgreSQL cases carry the `postgres` marker (`make test-fast` leaves them out)
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def postgres_base_url() -> str | None:
    """The PostgreSQL URL of the test server, or ``None`` (the case is skipped)."""
    url = os.environ.get(POSTGRES_ENV)
    return resolve_url(url) if url else None


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty store: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set (.ci/run starts PostgreSQL and sets it)")
    schema = f"assay_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An open, empty store on each backend."""
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()

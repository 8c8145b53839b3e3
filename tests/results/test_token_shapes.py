"""The secret scan recognises well-known token shapes through Yelp's ``detect-secrets``
plugins (GitLab, npm, JWTs, Azure storage account keys, AWS secret keys, SendGrid, PyPI...),
each reported by kind and line, never by value; ordinary run content is no finding."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from assay.results.secret_scan import scan_buffer
from assay.results.secrets import Redactor

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")  # fmt: skip
TOKENS = [
    ("GitLab Token", "glpat-Zx81kQ2wL0pR7mN4bV6c"),
    ("JSON Web Token", JWT),
    ("NPM tokens", "//registry.npmjs.org/:_authToken=npm_4fJ9kL2mN8pQ1rS7tU3vXyZ0aBcDeFgH"),
    ("Azure Storage Account access key",
     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "aB3d" * 22),
    ("AWS Access Key", "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9k3mQ2pL'"),
    ("SendGrid API Key", "SG." + "a1" * 11 + "." + "b2c" * 14 + "d"),
    ("PyPI Token", "pypi-AgEIcHlwaS5vcmc" + "Qx7" * 24),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text"), TOKENS)
def test_each_token_shape_is_found_by_kind_on_its_line(kind: str, text: str) -> None:
    found = scan_buffer(f"first line\nsecond {text} here\n".encode(), Redactor())
    assert (2, f"a string shaped like {kind}") in found, found
    assert all(text not in what for _, what in found)


def test_ordinary_run_content_sets_off_no_library_shape() -> None:
    rows = [json.dumps({"row_id": f"r{i}", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, str(i))),
                        "content_hash": hashlib.sha256(str(i).encode()).hexdigest(),
                        "sha1": hashlib.sha1(str(i).encode()).hexdigest(),
                        "started": 1733220000 + i, "text": "eyJ starts base64 of a JSON object"})
            for i in range(200)]  # fmt: skip
    assert scan_buffer("\n".join(rows).encode(), Redactor()) == []

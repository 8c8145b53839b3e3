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
    ("an AWS secret access key",  # assay's shape wins the overlap with the library's
     "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9k3mQ2pL'"),
    ("SendGrid API Key", "SG." + "a1" * 11 + "." + "b2c" * 14 + "d"),
    ("PyPI Token", "pypi-AgEIcHlwaS5vcmc" + "Qx7" * 24),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text"), TOKENS)
def test_each_token_shape_is_found_by_kind_on_its_line(kind: str, text: str) -> None:
    found = scan_buffer(f"first line\nsecond {text} here\n".encode(), Redactor())
    assert (2, f"a string shaped like {kind}") in found, found
    assert all(text not in what for _, what in found)


SECRET = "R5Kjp1vRt+1fjORS/6ilI8ihN5KXSc7Tvo/hBKqF"


@pytest.mark.parametrize(
    ("text", "marker"),
    [(f"AWS_SECRET_ACCESS_KEY={SECRET}", "aws-secret-key"),  # `env`, a .env file
     (f"aws_secret_access_key = {SECRET}", "aws-secret-key"),  # ~/.aws/credentials
     (f'{{"SecretAccessKey": "{SECRET}"}}', "aws-secret-key"),  # `aws sts` JSON
     ("token npm_4fJ9kL2mN8pQ1rS7tU3vXyZ0aBcDeFgH1234 here", "npm-token"),  # a bare npm token
     (f"AKIAQ3EGRS4TY7VLWX2M {SECRET}", "aws-secret-key"),  # beside its key id
     (f"bob,,AKIAQ3EGRS4TY7VLWX2M,{SECRET}", "aws-secret-key")],  # AWS's credentials CSV
    ids=["env", "credentials-file", "sts-json", "npm-bare", "after-key-id", "credentials-csv"],
)  # fmt: skip
def test_unquoted_aws_secret_keys_and_bare_npm_tokens_are_redacted_and_found(
    text: str, marker: str
) -> None:
    """Found by a break-test: detect-secrets' AWS pattern wants the key quoted and its npm
    pattern the .npmrc line, so the commonest leaks were written in clear and the scan
    passed."""
    redacted = Redactor().redact(text)
    assert f"[redacted:{marker}]" in redacted and SECRET not in redacted
    assert "npm_4fJ9" not in redacted
    found = scan_buffer(f"x\n{text}\n".encode(), Redactor())
    assert (2, "a string shaped like an AWS secret access key" if "aws" in marker
            else "a string shaped like an npm access token") in found, found  # fmt: skip
    assert {line for line, _ in found} == {2}


@pytest.mark.parametrize(
    ("text", "marker"),
    [("SKe60caea63367c29a80b21ead8f062d15", "twilio-key"),
     ("ACa4f4ef27e9589c6948f6d30c01c3f252", "twilio-key"),
     ("edc87ff4adfa36d0840164709ab7f3f3-us12", "mailchimp-key"),
     ("146166823:AAZcmzTUoRyj9nde9syxoAwuKmhr7jmPY72", "telegram-token"),
     ("AKCor89QtvnQzKlIeyGFPnShWzKbhNgVpqCzGdWmPyagqqr5vJIGA9HK2gOCZPeJMQW9cy78k",
      "artifactory-token"),
     ("secret_access_key = cf5f1dfd9c9b9f89900715dc1ac1a27df8713e4731de361b", "ibm-cos-hmac"),
     ("Authorization: Bearer Ab3Cd5Ef7Gh9Ij1Kl2Mn4Op6Qr8St0Uv", "bearer-token"),
     ("dop_v1_" + "a1b2c3d4" * 8, "digitalocean-token"),
     ("dapi0123456789abcdef0123456789abcdef", "databricks-token"),
     ("shpat_0123456789abcdef0123456789abcdef", "shopify-token"),
     ("Authorization: Basic YWRtaW46S3o0UHE4V20yUnQ2", "authorization"),
     # user:Pz3Oc6Vb9Nm2Ax5Sd8Fq: a Basic header's base64 without a digit (a break-test)
     ("Authorization: Basic dXNlcjpQejNPYzZWYjlObTJBeDVTZDhGcQ==", "authorization"),
     ("Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "authorization"),
     # an agent CLI's own token in the `env` it printed (a platform engineer's break-test)
     ("CLAUDE_CODE_MESSAGING_TOKEN=aee31fda0b1c2d3e4f5a6b7c8d9e0f1a", "secret-variable"),
     ("export DB_PASSWORD=hunter2hunter2x9", "secret-variable"),
     ('export MY_SERVICE_SECRET="Zq8Wx7Ec6Rv5Tb4Yn3Um"', "secret-variable"),  # export -p
     ("DB_PASSWORD: hunterhunterhunter22", "secret-variable"),  # YAML
     ('{"SESSION_TOKEN": "b7c8d9e0f1a2b3c4d5e6"}', "secret-variable"),  # JSON
     ("session_token=c1d2e3f4a5b6c7d8", "secret-variable"),
     ("x-api-key: Hh2Gg3Ff4Dd5Ss6Aa7Qq", "secret-variable"),  # a gateway's header
     ("EAAAl8q2Wm7Xb1Zz4Ck9Pd3Lr6Tt5Yy0Hh2Jj8Nn4Qq1Ss7Ee3Uu9Ii5Oo6Gg2Ff0Aa1Bb", "square-token")],
)  # fmt: skip
def test_more_detect_secrets_shapes_and_service_tokens_are_redacted_and_found(
    text: str, marker: str
) -> None:
    """A security review wrote each of these in clear with the scan passing (Twilio,
    Mailchimp, Telegram, Artifactory and IBM COS HMAC are detect-secrets detectors)."""
    redacted = Redactor().redact(f"a {text} b")
    assert f"[redacted:{marker}]" in redacted, redacted
    assert len(scan_buffer(f"x\n{text}\n".encode(), Redactor())) == 1


@pytest.mark.parametrize(
    "text",
    ["xSKe60caea63367c29a80b21ead8f062d15",  # inside a word
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855-us1",  # a sha256
     "12345678:AAshort", "the bearer of bad news", "zdapi0123456789abcdef0123456789abcdef",
     "the authorization token was approved by basic rules",
     "Authorization: Basic abcdefghijklmnop",  # no digit, and no user:password inside
     "MAX_TOKENS=4096", "STOP_TOKEN=<DONE>", "GITHUB_TOKEN=$GITHUB_TOKEN",
     "SECRET=placeholder-value", '"sort_key": "created_at_2024"', '"max_tokens": 4096',
     '"api_key_env": "OPENAI_API_KEY"', '"stop_token": "<DONE>"'],
)  # fmt: skip
def test_the_new_shapes_leave_ordinary_text_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_ordinary_run_content_sets_off_no_library_shape() -> None:
    rows = [json.dumps({"row_id": f"r{i}", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, str(i))),
                        "content_hash": hashlib.sha256(str(i).encode()).hexdigest(),
                        "sha1": hashlib.sha1(str(i).encode()).hexdigest(),
                        "started": 1733220000 + i, "text": "eyJ starts base64 of a JSON object"})
            for i in range(200)]  # fmt: skip
    assert scan_buffer("\n".join(rows).encode(), Redactor()) == []


PEM_LINES = ["MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu",
             "KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm",
             "c9vWGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLi", "Qw=="]  # fmt: skip
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES, "-----END RSA PRIVATE KEY-----"])


@pytest.mark.parametrize(
    "piece",
    [PEM, PEM.rsplit("\n", 1)[0], PEM.rsplit("\n", 3)[0], PEM[PEM.index("KUpR") + 9 :],
     PEM[PEM.index("c9vW") :], json.dumps(PEM)[1:-1], json.dumps(PEM[80:])[1:-1]],
    ids=["whole", "no-end-line", "cut-short", "tail-mid-line", "tail", "json", "json-tail"],
)  # fmt: skip
def test_a_private_key_is_redacted_whole_or_in_any_part(piece: str) -> None:
    """Found in review: a key cut short (no END line) kept its lines after the first, and
    the end of a key (a stderr tail that starts inside it) was not recognised at all."""
    text = f"before: {piece}\nafter. ok"
    redacted = Redactor().redact(text)
    assert "[redacted:private-key]" in redacted
    assert not [line for line in PEM_LINES if line[:12] in redacted], redacted
    assert redacted.startswith("before: ") and redacted.endswith(". ok")
    if piece.startswith("-----") and "\\n" in piece:
        json.loads(f'"{redacted.splitlines()[0]}"')  # a JSON string stays valid JSON


def test_an_env_listing_of_markers_in_json_is_no_finding_and_a_value_in_it_is() -> None:
    """A coding agent's ``env`` in trace.json (JSON: each newline the two characters ``\\n``):
    the value after a secret-named variable ran over the escape into the next variables, and
    from a marker redaction wrote, so a passing run exited 1 with nothing left to remove
    (two break-tests)."""
    listed = (
        "ANTHROPIC_API_KEY=[redacted:ASSAY_BRIDGE_KEY]\nCONTAINER=uid-gwttwf-nkwvwz-nfmbcv"
        "\nCLAUDE_CODE_MESSAGING_TOKEN=[redacted:secret-variable]\nHOME=/tmp/h-8ad1f0e9c2"
    )
    assert scan_buffer(json.dumps({"output": listed}).encode(), Redactor()) == []
    leaked = listed.replace("[redacted:secret-variable]", "aee31fda0b1c2d3e4f5a6b7c8d9e0f1a")
    found = scan_buffer(json.dumps({"output": leaked}).encode(), Redactor())
    assert found == [(1, "a string shaped like a secret-named variable's value")]
    assert "aee31fda" not in Redactor().redact(json.dumps({"output": leaked}))

"""The redactor: which names hold secrets, every escaped form of a value, short values, URL
passwords, JSON kept valid, values added from another thread."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from assay.results.io import redact_json, write_json_atomic, write_model_atomic, write_text
from assay.results.run import SkippedTask
from assay.results.secrets import (
    MIN_SECRET_LENGTH,
    Redactor,
    clip_head,
    clip_tail,
    is_secret_name,
    marker,
    url_passwords,
)

KEY = "sk-proj-Zq81vXw2LmN4pR7tY0uB3cD6"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("my_token", True),
        ("DB_PASSWORD", True),
        ("CLIENT_SECRET", True),
        ("SECRETS_FILE", True),
        ("AWS_ACCESS_KEY_ID", True),  # a provider credential, whatever its name looks like
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("PATH", False),
        ("HOME", False),
        ("KEYBOARD_LAYOUT", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("OPENAI_BASE_URL", False),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("SERVICE_APIKEY", True),
        ("LDAP_PASSWD", True),
        ("ADO_PAT", True),
        ("SENTRY_DSN", True),
        ("TF_TOKEN_app_terraform_io", True),
        ("PASSWORD_OF_DB", True),
        ("MYTOKEN", True),
        ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", False),  # a setting, not a credential
        ("MAX_TOKENS", False),
        ("PATCH_LEVEL", False),
        # common credential names a security review found passed to agents in clear
        ("SMTP_PASS", True),
        ("DB_PASS", True),
        ("GOOGLE_CREDENTIALS", True),  # Terraform's: a whole service-account key
        ("NPM_AUTH", True),
        ("BASIC_AUTH", True),
        ("PASSPHRASE", True),
        ("AUTH_HEADER", True),
        ("SESSION_COOKIE", True),
        ("MY_API_KEY_1", True),
        ("DB_PASSWORD2", True),
        ("SSH_PRIVATE_KEY_PATH", True),
        ("SSHPASS", True),
        ("DOCKER_AUTH_CONFIG", True),
        ("LDAP_BIND_PW", True),
        ("DB_CREDS", True),
        ("OTP_SEED", True),
        ("COMPASS", False),
        ("PYTHONHASHSEED", False),
        ("ASSAY_ENV_PASSTHROUGH", False),
        ("BYPASS_CACHE", False),
        ("GIT_AUTHOR_NAME", False),
        ("SSH_AUTH_SOCK", False),
        ("COLUMNS", False),
        ("x-api-key", True),  # a header name in a task's extra_body (a break-test)
        ("X-Api-Key", True),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_every_form_of_a_value_is_replaced_by_its_name() -> None:
    value = 'ab"c|d<e>&f\\g-long-enough'
    redactor = Redactor()
    redactor.add("MY_TOKEN", value)
    shown = marker("MY_TOKEN")
    assert shown == "[redacted:MY_TOKEN]"
    texts = [
        f"plain {value} text",
        json.dumps({"v": value}),
        json.dumps({"v": value}, ensure_ascii=True),
        '<e a="'
        + value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        + '"/>',
        "| " + value.replace("|", "\\|") + " |",
    ]
    for text in texts:
        redacted = redactor.redact(text)
        assert shown in redacted, text
        assert "long-enough" not in redacted, text


def test_the_longest_value_wins_and_the_first_name_names_a_shared_value() -> None:
    redactor = Redactor()
    redactor.add("A_KEY", "abcdefgh")
    redactor.add("B_KEY", "abcdefgh-and-more")
    redactor.add("C_KEY", "abcdefgh")
    assert redactor.redact("x abcdefgh-and-more abcdefgh") == "x [redacted:B_KEY] [redacted:A_KEY]"
    assert redactor.names == {"A_KEY", "B_KEY", "C_KEY"}


def test_short_values_are_named_but_not_redacted() -> None:
    redactor = Redactor(shapes=False)
    redactor.add("PIN_PASSWORD", "1234")
    redactor.add("EMPTY_TOKEN", "")
    assert redactor.short_names == ["PIN_PASSWORD"]
    assert "PIN_PASSWORD" in redactor.names
    assert not redactor  # nothing to redact (token shapes aside)
    assert redactor.redact("pin 1234") == "pin 1234"
    assert MIN_SECRET_LENGTH == 8


def test_a_redaction_marker_is_never_taken_for_a_value() -> None:
    redactor = Redactor(shapes=False)
    redactor.add("MY_TOKEN", "[redacted:MY_TOKEN]")
    assert not redactor and redactor.names == frozenset()


def test_environment_secrets_and_url_passwords() -> None:
    environ = {
        "OPENAI_API_KEY": KEY,
        "PATH": "/usr/bin:/bin",
        "ASSAY_STORE": "postgresql://eval:s3cretPassw0rd@db.local/assay",
        "PLAIN_URL": "https://example.com/x",
        "MY_LLM": "named-by-the-task-0001",
    }
    redactor = Redactor.from_environment(environ, names=["MY_LLM"])
    text = " ".join(environ.values())
    out = redactor.redact(text)
    assert KEY not in out and "s3cretPassw0rd" not in out and "named-by-the-task" not in out
    assert "/usr/bin:/bin" in out and "https://example.com/x" in out
    assert "postgresql://eval:[redacted:ASSAY_STORE]@db.local/assay" in out
    assert redactor.names == {"OPENAI_API_KEY", "MY_LLM"}  # a URL's variable still passes
    assert url_passwords("a https://u:p%40ss-word-1@h/x b") == ["p%40ss-word-1", "p@ss-word-1"]


def test_multi_line_values_are_redacted_line_by_line_too() -> None:
    pem = (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
        "BKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"
    )
    redactor = Redactor()
    redactor.add("SSH_KEY", pem)
    one_line = pem.replace("\n", " ")  # a log that joined the lines
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in redactor.redact(one_line)


def test_redact_data_covers_keys_and_leaves_numbers() -> None:
    redactor = Redactor()
    redactor.add("MY_TOKEN", "12345678")
    data = {"12345678": ["a 12345678 b", 12345678, None, True]}
    assert redactor.redact_data(data) == {
        "[redacted:MY_TOKEN]": ["a [redacted:MY_TOKEN] b", 12345678, None, True]
    }


def test_json_files_stay_valid_json_when_a_value_is_a_number(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("NUMERIC_PASSWORD", "20240101")
    data = {"count": 20240101, "note": "code 20240101", "list": [{"x": "20240101"}]}
    write_json_atomic(tmp_path / "a.json", data, redactor=redactor)
    written = json.loads((tmp_path / "a.json").read_text())
    assert written == {"count": 20240101, "note": "code [redacted:NUMERIC_PASSWORD]",
                       "list": [{"x": "[redacted:NUMERIC_PASSWORD]"}]}  # fmt: skip
    lines = json.dumps({"n": 20240101, "s": "20240101"}) + "\n" + json.dumps({"s": "x"}) + "\n"
    records = [json.loads(x) for x in redact_json(lines, redactor, compact=True).splitlines()]
    assert records == [{"n": 20240101, "s": "[redacted:NUMERIC_PASSWORD]"}, {"s": "x"}]


def test_every_writer_redacts(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", KEY)
    write_text(tmp_path / "t.txt", f"key {KEY}", redactor=redactor)
    write_model_atomic(tmp_path / "m.json", SkippedTask(path=KEY, reason="r"), redactor=redactor)
    write_json_atomic(tmp_path / "c.json", {"k": KEY}, compact=True, redactor=redactor)
    for name in ("t.txt", "m.json", "c.json"):
        text = (tmp_path / name).read_text()
        assert KEY not in text and "[redacted:OPENAI_API_KEY]" in text
    assert json.loads((tmp_path / "m.json").read_text())["path"] == "[redacted:OPENAI_API_KEY]"


def test_bytes_are_redacted_like_text() -> None:
    redactor = Redactor()
    redactor.add("GH_TOKEN", "ghp_ünïcode-value-1")
    data = "x ghp_ünïcode-value-1 y".encode()
    assert redactor.redact_bytes(data) == b"x [redacted:GH_TOKEN] y"
    assert redactor.find_bytes(data) == [(2, 2 + len("ghp_ünïcode-value-1".encode()), "GH_TOKEN")]
    assert redactor.redact_bytes(b"nothing") == b"nothing"


def test_values_added_from_other_threads_while_redacting() -> None:
    redactor = Redactor()
    values = [f"row-credential-{i:04d}" for i in range(200)]

    def add(chunk: list[str]) -> None:
        for value in chunk:
            redactor.add("ASSAY_ROW_CREDENTIAL", value)

    threads = [threading.Thread(target=add, args=(values[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        redactor.redact(" ".join(values))  # never fails half-way through an add
    for thread in threads:
        thread.join()
    assert "row-credential" not in redactor.redact(" ".join(values))


def test_clips_never_split_a_key_so_redaction_sees_it_whole() -> None:
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", KEY)
    text = f"401: the key {KEY} was refused by the server"
    for limit in range(len("401: the key ") + 2, len("401: the key ") + len(KEY)):
        head = redactor.redact(clip_head(text, limit, "..."))
        assert head in ("401: the key ...", "401: the key..."), limit  # the key whole, or out
    start = len(text) - len(" was refused by the server") - 5
    tail = clip_tail(text, len(text) - start)
    assert tail == "… was refused by the server"
    assert clip_head("short", 10) == "short" and clip_tail("short", 10) == "short"


def test_a_clip_in_a_long_run_never_keeps_a_piece_of_a_token() -> None:
    """Found in review: a tool result of one long run (``AAA…=ghp_…=BBB…``) was clipped
    inside the token, so the piece kept was no longer recognised; the clip now falls
    before (or, at the tail, after) a token shape it would split."""
    token = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"
    for lead in range(3950, 4001, 3):  # the clip at 8,000 falls back to 3,999: in the token
        text = "A" * lead + "=" + token + "=" + "B" * 5000
        for clipped in (clip_head(text, 8000), clip_tail(text[: lead + 42], lead // 2 + 20)):
            assert "ghp_" not in clipped or token in clipped, (lead, clipped[-60:])
            assert "u8jzPde0" not in clipped or token in clipped


def test_a_pattern_covers_credentials_minted_per_row() -> None:
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", KEY)
    redactor.add_pattern("ASSAY_ROW_CREDENTIAL", r"assay-row-[0-9a-f]{32}")
    rows = [f"assay-row-{i:032x}" for i in range(3)]
    text = f"{rows[0]} {KEY} {rows[2]} assay-row-short"
    assert redactor.redact(text) == (
        "[redacted:ASSAY_ROW_CREDENTIAL] [redacted:OPENAI_API_KEY] "
        "[redacted:ASSAY_ROW_CREDENTIAL] assay-row-short"
    )
    assert "ASSAY_ROW_CREDENTIAL" in redactor.names
    data = f"x\n{rows[1]}".encode()
    assert redactor.redact_bytes(data) == b"x\n[redacted:ASSAY_ROW_CREDENTIAL]"
    assert [name for _, _, name in redactor.find_bytes(data)] == ["ASSAY_ROW_CREDENTIAL"]
    with pytest.raises(re.error):
        redactor.add_pattern("BAD", "(")


def test_a_redactor_survives_pickling_as_the_plan_sent_to_a_cluster_does() -> None:
    import pickle

    redactor = Redactor()
    redactor.add("SERVICE_TOKEN", "tok-0123456789abcdef")
    redactor.add_pattern("ASSAY_BRIDGE_KEY", "assay-row-[0-9a-f]{8}")
    copy = pickle.loads(pickle.dumps(redactor))
    text = "tok-0123456789abcdef and assay-row-0badf00d"
    assert copy.redact(text) == redactor.redact(text)
    assert copy.redact(text) == "[redacted:SERVICE_TOKEN] and [redacted:ASSAY_BRIDGE_KEY]"
    copy.add("OTHER_SECRET", "another-long-value")  # its lock works again
    assert copy.names == {"SERVICE_TOKEN", "ASSAY_BRIDGE_KEY", "OTHER_SECRET"}


QUOTED = "Pa\"ss\\wo'rd!<&>|9"  # a password with every character a writer escapes


@pytest.mark.parametrize(
    "written",
    [
        repr(QUOTED),  # a criterion's details print values with repr()
        repr(f"expected {QUOTED}, got 'x'"),  # repr of a text holding both quotes
        repr(f'say "{QUOTED}"'),
        json.dumps(repr(QUOTED)),  # a repr written into a JSON string
        json.dumps({"v": QUOTED})
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026"),  # Go's encoding/json, report.html's data
        "<p title='"
        + QUOTED.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
        + "'>",  # Jinja2's autoescape
        "<p>" + __import__("html").escape(QUOTED, quote=True) + "</p>",
        json.dumps(json.dumps({"v": QUOTED})),  # JSON text inside a JSON string
        f"  {QUOTED}  ",
    ],
)
def test_a_value_is_redacted_as_every_writer_escapes_it(written: str) -> None:
    redactor = Redactor()
    redactor.add("DB_PASSWORD", QUOTED)
    redacted = redactor.redact(written)
    assert "[redacted:DB_PASSWORD]" in redacted, written
    assert "ss" not in redacted.replace("[redacted:DB_PASSWORD]", ""), redacted


def test_a_value_with_surrounding_whitespace_is_redacted_when_printed_stripped() -> None:
    redactor = Redactor()
    redactor.add("PAD_TOKEN", "  padded-token-value-77\n")
    assert redactor.redact("[padded-token-value-77]") == "[[redacted:PAD_TOKEN]]"


PASSWORD = "hunter2!Correct-Horse#Battery"


def test_clips_never_cut_a_run_without_whitespace_so_a_password_is_whole_or_out() -> None:
    redactor = Redactor()
    redactor.add("APP_PASSWORD", PASSWORD)
    text = f"login failed for {PASSWORD} at db.example:5432 " + "y" * 40
    prefix = len("login failed for ")
    for limit in range(prefix + 2, prefix + len(PASSWORD) + 1):
        head = redactor.redact(clip_head(text, limit))
        assert head == "login failed for …", (limit, head)
    for limit in range(len(text) - prefix - len(PASSWORD), len(text) - prefix - 2):
        tail = redactor.redact(clip_tail(text, limit))
        assert "hunter2" not in tail and "Battery" not in tail and "Horse" not in tail, limit


def test_a_piece_of_a_known_secret_left_at_a_cut_mark_is_redacted() -> None:
    redactor = Redactor()
    redactor.add("APP_PASSWORD", PASSWORD)
    run = "@" * 600 + PASSWORD + "@" * 600  # one run longer than the clip's window
    for limit in range(605, 600 + len(PASSWORD) + 4):
        head = redactor.redact(clip_head(run, limit))
        assert not any(PASSWORD[:n] in head for n in range(8, len(PASSWORD) + 1)), limit
    for limit in range(600, 600 + len(PASSWORD) + 4):
        tail = redactor.redact(clip_tail(run, limit))
        assert not any(PASSWORD[-n:] in tail for n in range(8, len(PASSWORD) + 1)), limit
    assert redactor.redact(f"x {PASSWORD[:12]}... and …{PASSWORD[-9:]} y") == (
        "x [redacted:APP_PASSWORD]... and …[redacted:APP_PASSWORD] y"
    )
    assert redactor.contains(f"{PASSWORD[:10]}…")
    assert redactor.redact(f"{PASSWORD[:7]}… {PASSWORD[:12]} ...") == (
        f"{PASSWORD[:7]}… {PASSWORD[:12]} ..."  # too short, or not at a cut mark
    )


def test_url_passwords_in_a_query_or_a_libpq_string_and_in_any_variable() -> None:
    assert url_passwords("postgresql+psycopg://u@h/db?sslmode=require&password=Qu3ry%21Pw1") == [
        "Qu3ry%21Pw1",
        "Qu3ry!Pw1",
    ]
    assert url_passwords("host=db user=u password=LibpqPassw0rd dbname=x") == ["LibpqPassw0rd"]
    redactor = Redactor()
    redactor.add_variable("SVC_URL", "https://bob:SvcUrlPassw0rd@h/x")
    assert redactor.redact("SvcUrlPassw0rd") == "[redacted:SVC_URL]"
    assert redactor.names == frozenset()  # the variable itself still passes


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_known_value_written_in_utf16_is_redacted_and_found(encoding: str) -> None:
    """PowerShell's `>` and Windows tools write UTF-16: a kept file held the token in clear
    and the scan said clean (a platform engineer's break-test); the file stays UTF-16."""
    redactor = Redactor.from_environment({"MY_SERVICE_TOKEN": "Tk9Lm3Np7Qr2St6Uv1Wx5Yz"})
    data = "tok Tk9Lm3Np7Qr2St6Uv1Wx5Yz end".encode(encoding)
    assert redactor.redact_bytes(data).decode(encoding) == "tok [redacted:MY_SERVICE_TOKEN] end"
    assert [name for _, _, name in redactor.find_bytes(data)] == ["MY_SERVICE_TOKEN"]
    plain = b"tok Tk9Lm3Np7Qr2St6Uv1Wx5Yz end"
    assert redactor.redact_bytes(plain) == b"tok [redacted:MY_SERVICE_TOKEN] end"

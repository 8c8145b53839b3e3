"""Which recorded command-line calls match a set of facets: the one rule that the
``cli_called`` criterion (grading ``cli_mocks/calls.jsonl``), the ``record_cli`` shims
(choosing a response) and the task file's checks apply, after Coder Eval's ``cli_called``
(see ``coder_eval_agents.md`` §2). It imports only the standard library.

A call is ``argv`` (the arguments after the program's name) and its ``tool``. Facets, as
plain JSON-shaped dicts so that a shim can use this module with only the standard library
(it is copied beside the shims and imported from there):

- ``tool``: the program's name (absent: any);
- ``verb`` (a string of space-separated tokens, or a list) or ``verb_any_of`` (a list of
  them): an ordered prefix of the call's non-flag tokens;
- ``positional``: a non-empty list, a prefix of the non-flag tokens after the verb;
- ``flags``: flag name (without dashes) → a predicate: a bare scalar (``equals``) or a
  mapping with exactly one of ``equals``, ``contains``, ``matches_regex`` (with ``flags``,
  Python's ``re`` flag bits), ``any_of``, ``present: true``, ``absent: true``, and optional
  ``aliases`` (other names of the flag, e.g. ``["t"]`` for ``-t``); a flag given several
  times matches on any of its values;
- ``value_flags`` (default ``["output"]``): flags that take a value although no predicate
  names them; ``ignore_flags`` (default ``["output"]``): flags whose value is read and
  ignored.

Parsing (:func:`parse_argv`): only flags named in ``flags`` (with a value predicate),
``value_flags`` or ``ignore_flags`` take the next token as their value; ``--name=value``
always binds; ``-rf`` is the flags ``r`` and ``f``; ``--`` ends the flags.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

PREDICATES = ("equals", "contains", "matches_regex", "any_of", "present", "absent")
VALUE_PREDICATES = ("equals", "contains", "matches_regex", "any_of")
DEFAULT_VALUE_FLAGS = ("output",)
DEFAULT_IGNORE_FLAGS = ("output",)
PRESENT = True  # the value of a flag given without one


def tokens(verb: str | Sequence[str]) -> list[str]:
    """A verb as its tokens: ``"pr create"`` → ``["pr", "create"]``."""
    return verb.split() if isinstance(verb, str) else [str(token) for token in verb]


def predicate(value: Any) -> dict[str, Any]:
    """A flag's predicate in its mapping form (a bare scalar is ``{"equals": value}``)."""
    if isinstance(value, Mapping):
        return dict(value)
    return {"equals": value}


def _names(facets: Mapping[str, Any]) -> dict[str, str]:
    """Every name a flag is given by (its own and its aliases) → the flag's name."""
    names: dict[str, str] = {}
    for flag, value in (facets.get("flags") or {}).items():
        names[str(flag)] = str(flag)
        for alias in predicate(value).get("aliases") or []:
            names[str(alias)] = str(flag)
    return names


def _consuming(facets: Mapping[str, Any]) -> set[str]:
    """The names (aliases included) whose flag takes the next token as its value."""
    taking = {str(f) for f in facets.get("value_flags", DEFAULT_VALUE_FLAGS) or []}
    taking |= {str(f) for f in facets.get("ignore_flags", DEFAULT_IGNORE_FLAGS) or []}
    for flag, value in (facets.get("flags") or {}).items():
        if any(key in predicate(value) for key in VALUE_PREDICATES):
            taking.add(str(flag))
    names = _names(facets)
    return {name for name, flag in names.items() if flag in taking} | taking


def parse_argv(
    argv: Sequence[str], facets: Mapping[str, Any]
) -> tuple[list[str], dict[str, list[Any]]]:
    """``(non-flag tokens, flag name → values)`` of a call, as ``facets`` read it (see the
    module docstring); an alias is reported under its flag's name, a flag without a value
    has the value ``True``."""
    names = _names(facets)
    taking = _consuming(facets)
    plain: list[str] = []
    flags: dict[str, list[Any]] = {}
    items = list(argv)
    index = 0
    while index < len(items):
        token = items[index]
        index += 1
        if token == "--":
            plain += items[index:]
            break
        if not token.startswith("-") or token == "-":
            plain.append(token)
            continue
        given = _flag_names(token)
        for position, (name, bound) in enumerate(given):
            value: Any = bound
            last = position == len(given) - 1
            if value is None and last and name in taking and index < len(items):
                value = items[index]
                index += 1
            flags.setdefault(names.get(name, name), []).append(PRESENT if value is None else value)
    return plain, flags


def _flag_names(token: str) -> list[tuple[str, str | None]]:
    """``--name=v`` → ``[("name", "v")]``; ``--name`` → ``[("name", None)]``; ``-rf`` →
    ``[("r", None), ("f", None)]``; ``-o=x`` → ``[("o", "x")]``."""
    if token.startswith("--"):
        name, equals, value = token[2:].partition("=")
        return [(name, value if equals else None)]
    body = token[1:]
    if "=" in body:
        name, _, value = body.partition("=")
        return [(name, value)]
    return [(letter, None) for letter in body]


Search = Callable[[str, str, int], Any]
"""``search(pattern, text, flags)``: a match or ``None`` (``re.search`` by default; the
criterion in assay's process gives a bounded one)."""


def _holds(rule: Mapping[str, Any], values: list[Any], search: Search | None = None) -> bool:
    if rule.get("absent"):
        return not values
    if rule.get("present"):
        return bool(values)
    texts = [str(v) for v in values if v is not PRESENT]
    if "equals" in rule:
        return str(_scalar(rule["equals"])) in texts
    if "contains" in rule:
        return any(str(rule["contains"]) in text for text in texts)
    if "matches_regex" in rule:
        chosen = search or re.search
        pattern, flags = str(rule["matches_regex"]), int(rule.get("flags") or 0)
        return any(chosen(pattern, text, flags) for text in texts)
    if "any_of" in rule:
        wanted = {str(_scalar(v)) for v in rule["any_of"]}
        return any(text in wanted for text in texts)
    return bool(values)


def _scalar(value: Any) -> Any:
    """How a YAML scalar reads as a command-line value (``true`` → ``true``, 3 → ``3``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def matches(
    call: Mapping[str, Any], facets: Mapping[str, Any], *, search: Search | None = None
) -> bool:
    """Whether a recorded ``call`` (``{"tool", "argv"}``) has every facet (``search``: how a
    ``matches_regex`` is searched, ``re.search`` by default)."""
    tool = facets.get("tool")
    if tool is not None and call.get("tool") != tool:
        return False
    plain, flags = parse_argv([str(a) for a in call.get("argv") or []], facets)
    verbs = [tokens(v) for v in facets.get("verb_any_of") or []]
    if facets.get("verb") is not None:
        verbs = [tokens(facets["verb"])]
    chosen = next((v for v in verbs if plain[: len(v)] == v), None) if verbs else []
    if chosen is None:
        return False
    positional = [str(p) for p in facets.get("positional") or []]
    rest = plain[len(chosen) :]
    if positional and rest[: len(positional)] != positional:
        return False
    return all(
        _holds(predicate(value), flags.get(str(flag), []), search)
        for flag, value in (facets.get("flags") or {}).items()
    )


def count(calls: Iterable[Mapping[str, Any]], facets: Mapping[str, Any]) -> int:
    """How many ``calls`` match ``facets``."""
    return sum(1 for call in calls if matches(call, facets))


def problems(facets: Mapping[str, Any]) -> list[str]:
    """What is wrong with a set of facets, for load-time refusal (empty: nothing)."""
    found: list[str] = []
    verb, any_of = facets.get("verb"), facets.get("verb_any_of")
    if verb is not None and any_of is not None:
        found.append("give 'verb' or 'verb_any_of', not both")
    if any_of is not None and not any_of:
        found.append("'verb_any_of' is empty: name at least one verb")
    for text in ([verb] if verb is not None else []) + list(any_of or []):
        found += _verb_problems(text)
    found += _any_of_problems([tokens(v) for v in any_of or []])
    positional = facets.get("positional")
    if positional is not None and not positional:
        found.append("'positional' is empty: leave it out or name at least one token")
    found += _flag_problems(facets)
    return found


def _verb_problems(verb: str | Sequence[str]) -> list[str]:
    words = tokens(verb)
    if not words or any(not w.strip() for w in words):
        return [f"verb {verb!r} is blank: name the subcommand tokens, e.g. 'pr create'"]
    flagged = [w for w in words if w.startswith("-")]
    if flagged:
        return [f"verb {verb!r} has a flag-looking token {flagged[0]!r}: put flags in 'flags'"]
    return []


def _any_of_problems(verbs: list[list[str]]) -> list[str]:
    found: list[str] = []
    for i, first in enumerate(verbs):
        for second in verbs[i + 1 :]:
            if first == second:
                found.append(f"'verb_any_of' lists {' '.join(first)!r} twice")
            elif first[: len(second)] == second or second[: len(first)] == first:
                short, long = sorted((first, second), key=len)
                found.append(f"'verb_any_of': {' '.join(short)!r} is a prefix of "
                             f"{' '.join(long)!r}, so the longer one never decides")  # fmt: skip
    return found


def _flag_problems(facets: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    ignored = {str(f) for f in facets.get("ignore_flags", DEFAULT_IGNORE_FLAGS) or []}
    owner: dict[str, str] = {}
    for flag, value in (facets.get("flags") or {}).items():
        rule = predicate(value)
        chosen = [key for key in PREDICATES if key in rule]
        unknown = sorted(set(rule) - set(PREDICATES) - {"aliases", "flags"})
        if unknown:
            found.append(f"flag '{flag}': unknown key(s) {unknown}; use one of {list(PREDICATES)}")
        if len(chosen) != 1:
            found.append(f"flag '{flag}' needs exactly one of {list(PREDICATES)}, got {chosen}")
        if str(flag) in ignored:
            found.append(f"flag '{flag}' has a predicate but is in 'ignore_flags'")
        if "matches_regex" in rule:
            try:
                re.compile(str(rule["matches_regex"]), int(rule.get("flags") or 0))
            except re.error as exc:
                found.append(f"flag '{flag}': invalid regex {rule['matches_regex']!r}: {exc}")
        for name in [str(flag), *[str(a) for a in rule.get("aliases") or []]]:
            if name in owner and owner[name] != str(flag):
                found.append(f"flag name '{name}' is used by '{owner[name]}' and '{flag}'")
            owner[name] = str(flag)
    return found

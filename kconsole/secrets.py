"""Secrets in client properties: where their values come from, and never showing them.

A client property's value (from a config file, a [clusters.NAME] profile or -X) may name an
environment variable, `"${KAFKA_PASSWORD}"` (`$${` is a literal `${`), and a secret property may
be read from a file instead, `<key>_file` (`"sasl.password_file" = "~/.config/kconsole/secret"`):
the file is read each time a client is made, its trailing newline stripped. A variable that is
not set, or a file that cannot be read, is a ConfigError naming the property, its origin and the
variable or file, never the value.

Every secret value kconsole has resolved is remembered (in memory only), so that text about to
be shown or written (a log record, an error message, an audit entry) can be scrubbed of it:
`scrub`, and `ScrubFilter` for logging handlers. `masked` shows a set of properties with the
secret ones as ***.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kconsole.errors import ConfigError, config_error

MASK = "***"
FILE_SUFFIX = "_file"
# Properties whose value is a secret, and which may also be given as `<key>_file`.
SECRET_KEYS = frozenset(
    {
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "zookeeper.auth",
        "zookeeper.sasl.password",
        "zookeeper.ssl.key.password",
    }
)
# Any other property whose name says it holds a secret (a Java client's sasl.jaas.config, a
# keystore key, a token) is masked too. Paths to secrets (`*_file`, `*.location`) are not.
_SECRET_NAME = re.compile(
    r"password|secret|jaas|credential|token(?!\.endpoint)|keystore\.key$|key\.pem$", re.I
)
_VARIABLE = re.compile(r"\$(\$?)\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Shorter values are not scrubbed from text: "abc" would be cut out of every word holding it.
_MIN_SCRUB = 4

_known: set[str] = set()
_known_lock = threading.Lock()


def is_secret(key: str) -> bool:
    """Whether the property `key` holds a secret (its value is never shown)."""
    if key.endswith(FILE_SUFFIX) or key.endswith(".location"):
        return False
    return key in SECRET_KEYS or bool(_SECRET_NAME.search(key))


def masked(props: Mapping[str, Any]) -> dict[str, Any]:
    """`props` with every secret value replaced by ***."""
    return {k: MASK if is_secret(k) and v not in (None, "") else v for k, v in props.items()}


def remember(value: str) -> None:
    """Scrub `value` from every text `scrub` sees from now on (a secret's resolved value)."""
    if len(value) >= _MIN_SCRUB:
        with _known_lock:
            _known.add(value)


def scrub(text: str) -> str:
    """`text` with every secret value kconsole has resolved replaced by ***."""
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)  # the longest first: one may hold another
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub_any(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings) with every known secret scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {k: scrub_any(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_any(v) for v in value]
    return value


class ScrubFilter(logging.Filter):
    """A logging filter (for handlers) that scrubs known secrets from every record's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _known:
            message = record.getMessage()
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True


class Resolved(dict[str, Any]):
    """Properties `resolve` has resolved: resolving them again returns them as they are (a
    secret read from a file may itself hold "${")."""


def resolve(
    props: Mapping[str, Any],
    origin: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Resolved:
    """`props` with every `${VAR}` replaced by the variable's value and every `<secret>_file`
    replaced by `<secret>` holding the file's content (read now, trailing newline stripped).
    The secret values are remembered for `scrub`. ConfigError names every property that cannot
    be resolved, with its origin (`origin`: property -> "-X", "[client] in FILE", ...). Values
    that are not strings (a logger, a callback, a number) are kept as they are."""
    if isinstance(props, Resolved):
        return Resolved(props)
    env = os.environ if env is None else env
    origin = origin or {}
    problems: list[str] = []
    out = Resolved()

    def problem(key: str, what: str) -> None:
        problems.append(f"{key} (from {origin.get(key, 'the settings')}): {what}")

    for key, raw in props.items():
        if not isinstance(raw, str):
            out[key] = raw
            continue
        value = _expand(key, raw, env, problem)
        if value is None:
            continue
        name = key.removesuffix(FILE_SUFFIX)
        if key.endswith(FILE_SUFFIX) and name in SECRET_KEYS:
            if name in props:
                problem(key, f"both {name} and {key} are given: keep one")
                continue
            secret = _read_secret(key, value, problem)
            if secret is None:
                continue
            out[name] = secret
        else:
            name = key
            out[key] = value
        if is_secret(name):
            remember(out[name])
    if problems:
        raise config_error(problems)
    return out


def resolve_problems(
    props: Mapping[str, Any],
    origin: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """What `resolve` would refuse, each problem on its own (empty when nothing)."""
    try:
        resolve(props, origin, env)
    except ConfigError as exc:
        return list(exc.problems)
    return []


def variables(props: Mapping[str, Any]) -> set[str]:
    """The environment variables the values of `props` name (`${VAR}`)."""
    return {
        m.group(2)
        for v in props.values()
        if isinstance(v, str)
        for m in _VARIABLE.finditer(v)
        if not m.group(1)
    }


def _expand(key: str, value: str, env: Mapping[str, str], problem: Any) -> str | None:
    missing: list[str] = []

    def one(m: re.Match[str]) -> str:
        if m.group(1):  # $${...}: a literal ${...}
            return "${" + m.group(2) + "}"
        name = m.group(2)
        if not _NAME.fullmatch(name):
            missing.append(f"${{{name}}} is not an environment variable's name")
            return ""
        if name not in env:
            missing.append(f"the environment variable {name} is not set")
            return ""
        return env[name]

    expanded = _VARIABLE.sub(one, value)
    if missing:
        for what in missing:
            problem(key, what)
        return None
    return expanded


def _read_secret(key: str, path_text: str, problem: Any) -> str | None:
    try:
        path = Path(path_text).expanduser()
    except RuntimeError:  # ~name of no user
        problem(key, f"{path_text!r}: no such home directory")
        return None
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        problem(key, f"cannot read the secret file {path}: {why}")
        return None
    secret = text.rstrip("\r\n")
    if not secret:
        problem(key, f"the secret file {path} is empty")
        return None
    return secret

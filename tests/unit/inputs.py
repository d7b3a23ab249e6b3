"""What the property tests of user input share: garbage to type, and the check that a refusal
is a clear error (the project's own type, a sentence, no Python internals)."""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st

T = TypeVar("T")


def props(n: int) -> settings:
    """Deterministic (derandomize: CI never flakes) and without deadlines (CI machines vary)."""
    return settings(max_examples=n, deadline=None, derandomize=True)


# Text as a terminal or a form delivers it: any character, lone surrogates too (undecodable
# bytes in argv become those), and the characters parsers split on or trip over.
SPECIAL = "\x00\r\n\t =,:/@-_.+[]{}\"'#~\\²\u0663\uff11\u2028\udc80\udcff\ud800"
chars = st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(SPECIAL))
NASTY = (
    "",
    " ",
    "0",
    "-0",
    "-1",
    "+1",
    "1_000",
    "1,000",
    "9" * 25,
    "9" * 400,
    "9" * 5000,
    "1e400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "²",
    "\u0663",
    "\uff11",
    "\x00",
    "\udcff",
    "\ud800",
    "=",
    "==",
    ",",
    ",,",
    "\n",
    "\r\n",
    ":",
    "/",
    "//",
    "@",
    ".",
    "..",
    "[" * 3000,
    "{" * 3000,
    '{"a":' * 3000,
    "~nosuchuser/x",
)
TOPIC_CHARS = string.ascii_letters + string.digits + "._-"  # what Kafka allows in a topic name


def topic_names(max_size: int) -> st.SearchStrategy[str]:
    """Valid topic names up to `max_size` characters."""
    return st.text(TOPIC_CHARS, min_size=1, max_size=max_size).filter(
        lambda t: t not in (".", "..")
    )


fragments = st.one_of(st.text(chars, max_size=12), st.sampled_from(NASTY))
junk = st.lists(fragments, max_size=4).map("".join)


def junk_after(*prefixes: str) -> st.SearchStrategy[str]:
    """Garbage, often behind one of `prefixes` so that it reaches the parser's deeper branches."""
    return st.tuples(st.sampled_from(("", *prefixes)), junk).map("".join)


def mixed(valid: st.SearchStrategy[T]) -> st.SearchStrategy[T | str]:
    """Mostly valid values, some garbage."""
    return st.one_of(valid, valid, junk)


_PYTHON = re.compile(
    r"Traceback|\b[A-Z]\w*(Error|Exception)\(|object at 0x|invalid literal for|"
    r"set_int_max_str_digits|NoneType|has no attribute|not subscriptable|unhashable type|"
    r"unsupported operand|can't concat|positional argument|takes \d+ positional|"
    r"datetime\.(date|time|datetime|timezone)\("
)


def assert_clear(exc: BaseException, typed: Iterable[object] = ()) -> None:
    """A refusal a person can act on: a message that is no Python internals. What the user
    typed is left out of the check: a message may quote it, whatever it holds."""
    message = str(exc)
    for text in typed:
        if text is None:
            continue
        for shown in (str(text), repr(text)):
            if shown:
                message = message.replace(shown, "")
    assert str(exc).strip(), f"{type(exc).__name__} without a message"
    assert not _PYTHON.search(message), f"{type(exc).__name__}: {exc}"


def passes(check: Callable[..., None], *args: Any, **kwargs: Any) -> Callable[[], bool]:
    """A call of `check` (a function that returns nothing or raises) that returns True."""

    def call() -> bool:
        check(*args, **kwargs)
        return True

    return call


def outcome(
    call: Callable[[], T],
    errors: type[BaseException] | tuple[type[BaseException], ...],
    *typed: Any,
) -> T | None:
    """`call()`'s result, or None when it refused with a clear `errors`; anything else (an
    unhandled exception) propagates and fails the test."""
    try:
        return call()
    except errors as exc:
        assert_clear(exc, typed)
        return None

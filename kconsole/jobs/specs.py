"""What jobs there are: each script in jobs/ with its options, read from the script's own
argparse parser (`build_parser()`), so the console, the CLI and `python jobs/<job>.py --help`
always agree."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kconsole.cluster.errors import ClusterError
from kconsole.paths import bundled

INTERNAL_OPTIONS = {"stop-with-parent", "jars", "help"}  # set by the manager, never by a user


class JobError(ClusterError):
    """A job could not be started or found; the message says why."""


@dataclass(frozen=True)
class JobOption:
    """One command-line option of a job (`name` is the long flag without dashes)."""

    name: str
    default: Any
    help: str
    kind: str = "str"  # str | int | float | choice | flag | list (repeatable KEY=VALUE)
    choices: tuple[str, ...] = ()
    form: str = "text"  # what a value looks like, in words ("a number of seconds, 0 or more")


@dataclass(frozen=True)
class JobSpec:
    """A job script in jobs/ with its options."""

    name: str  # "keyed-counts"
    script: Path
    description: str  # one line
    doc: str  # the module docstring
    options: tuple[JobOption, ...]
    make_parser: Callable[[], argparse.ArgumentParser] = field(compare=False, repr=False)

    def option(self, name: str) -> JobOption | None:
        norm = name.replace("_", "-").lstrip("-")
        return next((o for o in self.options if o.name == norm), None)

    @property
    def spark(self) -> bool:
        """A Spark job (takes --jars): needs Java and the Kafka connector jars."""
        return any(a.dest == "jars" for a in self.make_parser()._actions)


def jobs_dir() -> Path:
    """The Spark jobs kconsole ships (the repository's jobs/; KCONSOLE_JOBS_DIR moves it)."""
    override = os.environ.get("KCONSOLE_JOBS_DIR")
    return Path(override) if override else bundled("jobs")


_SPECS: dict[tuple[Path, float], JobSpec] = {}
_SPECS_LOCK = threading.Lock()


def available_jobs(directory: Path | None = None) -> list[JobSpec]:
    """Every job in jobs/: each script that defines NAME and build_parser()."""
    d = directory or jobs_dir()
    out = []
    for script in sorted(d.glob("*.py")):
        if script.name.startswith("_"):
            continue
        spec = _load_spec(script)
        if spec is not None:
            out.append(spec)
    return out


def get_job(name: str, directory: Path | None = None) -> JobSpec:
    """The job called `name` (keyed-counts and keyed_counts both work)."""
    norm = name.replace("_", "-")
    jobs = available_jobs(directory)
    for spec in jobs:
        if spec.name == norm:
            return spec
    known = ", ".join(s.name for s in jobs) or f"none in {directory or jobs_dir()}"
    raise JobError(f"no job called {name!r} (jobs: {known})")


def _load_spec(script: Path) -> JobSpec | None:
    key = (script, script.stat().st_mtime)
    with _SPECS_LOCK:
        if key in _SPECS:
            return _SPECS[key]
        mod_name = f"kconsole_job_{script.stem}"
        loader = importlib.util.spec_from_file_location(mod_name, script)
        if loader is None or loader.loader is None:
            return None
        module = importlib.util.module_from_spec(loader)
        saved = list(sys.path)  # a job script puts its own dir first, for `import _kconsole_jobs`
        try:
            loader.loader.exec_module(module)  # jobs import only the stdlib at module level
        except Exception as exc:
            raise JobError(f"cannot load job script {script}: {exc}") from exc
        finally:
            sys.path[:] = saved
        make_parser = getattr(module, "build_parser", None)
        name = getattr(module, "NAME", None)
        if make_parser is None or name is None:
            return None
        doc = (module.__doc__ or "").strip()
        spec = JobSpec(
            name=str(name).replace("_", "-"),
            script=script,
            description=" ".join(doc.split("\n\n")[0].split()),
            doc=doc,
            options=tuple(_options(make_parser())),
            make_parser=make_parser,
        )
        _SPECS[key] = spec
        return spec


def _options(parser: argparse.ArgumentParser) -> Iterable[JobOption]:
    for a in parser._actions:
        longs = [s for s in a.option_strings if s.startswith("--")]
        if not longs or a.help == argparse.SUPPRESS or a.dest == "help":
            continue
        name = longs[0][2:]
        if name in INTERNAL_OPTIONS:
            continue
        if isinstance(a, argparse._StoreTrueAction):
            kind = "flag"
        elif isinstance(a, argparse._AppendAction):
            kind = "list"
        elif a.choices:
            kind = "choice"
        elif a.type is int:
            kind = "int"
        elif a.type is float or getattr(a.type, "__name__", "") == "positive_or_zero":
            kind = "float"
        else:
            kind = "str"
        default = [] if kind == "list" else a.default
        choices = tuple(str(c) for c in a.choices or ())
        yield JobOption(name, default, a.help or "", kind, choices, _form(name, a, kind, choices))


MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|yarn|k8s://.+)$")


def _form(name: str, a: argparse.Action, kind: str, choices: tuple[str, ...]) -> str:
    """What a value of the option looks like, in words a person can type from."""
    seconds = " of seconds" if "second" in (a.help or "").lower() else ""
    if name == "starting-offsets":
        return "earliest, latest, or Spark's JSON offsets"
    if name == "master":
        return "local, local[N], local[*], spark://HOST:PORT, yarn or k8s://HOST"
    if kind == "choice":
        return "one of " + ", ".join(choices)
    if kind == "list":
        return "KEY=VALUE"
    if kind == "flag":
        return "on or off"
    if kind == "int":
        return "a whole number" + (", or empty for none" if a.default is None else "")
    if kind == "float":
        zero = ", 0 or more" if getattr(a.type, "__name__", "") == "positive_or_zero" else ""
        return f"a number{seconds}{zero}"
    return "text"


def value_problem(spec: JobSpec, name: str, value: Any) -> str | None:
    """What is wrong with `value` for option `name`, said with the option's name and the form
    it takes ("trigger: a number of seconds, 0 or more (it is empty)"); None if the job's own
    parser takes it. The start dialog asks this of each field before it closes."""
    opt = spec.option(name)
    action = next((a for a in spec.make_parser()._actions if f"--{name}" in a.option_strings), None)
    if opt is None or action is None or opt.kind == "flag" or value is None:
        return None
    if not isinstance(value, list | tuple) and not str(value).strip() and action.default is None:
        return None  # empty: not given (the dialog leaves such an option out)
    items = list(value) if isinstance(value, list | tuple) else [value]
    for item in items:
        text = str(item)
        try:
            parsed = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, ValueError, TypeError, OverflowError):
            parsed = _BAD
        ok = parsed is not _BAD and (not action.choices or parsed in action.choices)
        if ok and name == "starting-offsets" and text not in ("earliest", "latest"):
            try:
                json.loads(text)
            except (ValueError, RecursionError):
                ok = False
        if ok and name == "master" and text and not MASTER.match(text):
            ok = False
        if not ok:
            said = "it is empty" if not text.strip() else f"not {text[:60]!r}"
            return f"{name}: {opt.form} ({said})"
    return None


_BAD = object()

"""The guard that holds the door in every test (tests/door_guard.py) really catches an action
that goes around kconsole.commands, and lets the door's own calls through."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from kconsole.commands import Commands
from kconsole.jobs.manager import JobManager
from tests import door_guard


def _as_module(name: str, source: str) -> dict[str, Any]:
    """Run `source` as if it were module `name` (so its frames carry that __name__)."""
    scope: dict[str, Any] = {"__name__": name}
    exec(compile(source, f"<{name}>", "exec"), scope)
    return scope


class TestGuard:
    """What the guard records."""

    def test_every_guarded_method_exists_and_is_wrapped(self) -> None:
        """A renamed backend method would otherwise silently leave the guard."""
        for module_name, cls_name, names in door_guard.GUARDED:
            owner: Any = importlib.import_module(module_name)
            if cls_name:
                owner = getattr(owner, cls_name)
            for name in names:
                assert getattr(getattr(owner, name), "__kconsole_guarded__", False), name

    def test_a_screen_stopping_jobs_itself_is_a_violation(self, tmp_path: Path) -> None:
        """What ui/app.py did on unmount before: manager.stop_attached() from the app."""
        manager = JobManager(tmp_path)
        fake_ui = _as_module(
            "kconsole.ui.fake_screen", "def on_unmount(jobs):\n    return jobs.stop_attached()\n"
        )
        fake_ui["on_unmount"](manager)
        found = door_guard.take()
        assert [v.target for v in found] == ["JobManager.stop_attached"]
        assert found[0].caller.startswith("kconsole.ui.fake_screen.on_unmount:")

    def test_the_cli_calling_the_manager_is_a_violation(self, tmp_path: Path) -> None:
        manager = JobManager(tmp_path)
        fake_cli = _as_module(
            "kconsole.cli.fake_jobs", "def stop(jobs, run_id):\n    return jobs.stop(run_id)\n"
        )
        with pytest.raises(Exception):  # noqa: B017  (no such run: the call itself is what counts)
            fake_cli["stop"](manager, "no-such-run")
        assert [v.target for v in door_guard.take()] == ["JobManager.stop"]

    def test_the_door_stopping_jobs_is_not(self, tmp_path: Path) -> None:
        door = Commands(None, jobs=JobManager(tmp_path), audit=None)
        fake_ui = _as_module(
            "kconsole.ui.fake_app", "def on_unmount(door):\n    return door.stop_attached_jobs()\n"
        )
        assert fake_ui["on_unmount"](door) == []
        assert door_guard.take() == []

    def test_test_code_calling_a_backend_is_its_own_set_up(self, tmp_path: Path) -> None:
        JobManager(tmp_path).stop_attached()
        assert door_guard.take() == []

    def test_frames_of_the_backends_are_looked_through(self) -> None:
        """A backend calling a backend (LocalBrokerControl -> LocalCluster) is judged by who
        called the first one."""
        inner = _as_module(
            "kconsole.cluster.fake_backend",
            "import sys\ndef act(check):\n    return check(sys._getframe(0))\n",
        )
        outer_ui = _as_module("kconsole.ui.fake", "def press(act, check):\n    return act(check)\n")
        outer_door = _as_module(
            "kconsole.commands.fake", "def broker(act, check):\n    return act(check)\n"
        )
        where = outer_ui["press"](inner["act"], door_guard.caller_outside_door)
        assert where is not None and where.startswith("kconsole.ui.fake.press:")
        assert outer_door["broker"](inner["act"], door_guard.caller_outside_door) is None

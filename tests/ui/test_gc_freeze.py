"""The `kconsole` command's app moves what exists once the first cluster data is shown out of
the garbage collector's way (gc.freeze); apps built without asking for it (every test) do not."""

from __future__ import annotations

import gc

import pytest

from kconsole.ui import app as app_module
from kconsole.ui.app import make_app
from tests.ui.builders import T0, healthy
from tests.ui.conftest import feed, new_app


async def test_the_first_data_on_screen_freezes_what_exists_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc.unfreeze()
    calls: list[int] = []
    real = gc.freeze

    def freeze() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(app_module.gc, "freeze", freeze)
    app = make_app(None, freeze_gc=True, clock=lambda: T0)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            assert gc.get_freeze_count() == 0  # nothing shown yet
            feed(app, healthy(T0))
            await pilot.pause()
            assert calls == [1]
            assert gc.get_freeze_count() > 0
            feed(app, healthy(T0 + 1))
            await pilot.pause()
            assert calls == [1]  # once only
    finally:
        gc.unfreeze()


async def test_apps_built_without_it_leave_the_collector_alone() -> None:
    gc.unfreeze()
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        feed(app, healthy(T0))
        await pilot.pause()
        assert gc.get_freeze_count() == 0

"""The key bar shows what Textual's Footer would show, without remounting its keys on a move."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from kconsole.commands import Commands
from kconsole.ui.widgets.footer import KeyBar, KeySpec, shown
from tests.ui import builders as B
from tests.ui.conftest import FakeControl, feed, new_app, settle

SIZE = (160, 48)


def bar_keys(bar: KeyBar) -> list[KeySpec]:
    return [shown(k) for k in bar.query_children(FooterKey)]


def footer_keys(footer: Footer) -> list[tuple[KeySpec, bool]]:
    """What a bar shows, compact or not, key by key."""
    return [(shown(k), k.has_class("-compact")) for k in footer.query_children(FooterKey)]


async def with_reference(pilot: Pilot[None]) -> tuple[KeyBar, Footer]:
    screen = pilot.app.screen
    reference = Footer(id="reference")
    await screen.mount(reference)
    await settle(pilot)
    return screen.query_one(KeyBar), reference


async def test_every_move_shows_what_a_footer_would_and_keeps_the_keys() -> None:
    """Through every pane, the filter and back (commands present: the brokers pane adds its
    four keys, the groups pane one): the bar equals a fresh Footer after each move, and the
    keys already there are the same widgets, rewritten rather than mounted again."""
    app = new_app(commands=Commands(FakeControl()))
    async with app.run_test(size=SIZE) as pilot:
        feed(app, B.group_lag())
        await settle(pilot)
        bar, reference = await with_reference(pilot)
        counts: set[int] = set()
        kept = 0
        for key in ["tab"] * 8 + ["1", "slash", "escape", "3", "shift+tab", "4", "2"]:
            before = list(bar.query_children(FooterKey))
            await pilot.press(key)
            await settle(pilot)
            after = list(bar.query_children(FooterKey))
            assert footer_keys(bar) == footer_keys(reference), (key, app.focused)
            # Every key that is in both the old and the new bar at its position was kept.
            common = min(len(before), len(after)) - 1  # the palette's key is last in both
            assert after[:common] == before[:common], key
            kept += common
            counts.add(len(after))
        bar.compact = reference.compact = True  # the keys mounted by the bar follow it too
        await settle(pilot)
        assert footer_keys(bar) == footer_keys(reference)
        assert len(counts) >= 3, counts  # keys were added and removed, not only rewritten
        assert kept > 0
        descriptions = {s.description for s in bar_keys(bar)}
        assert app.focused is not None and app.focused.id == "partitions"
        assert "Stop" not in descriptions and "Filter" in descriptions


async def test_a_disabled_key_is_shown_disabled_after_a_move() -> None:
    """Read-only: the brokers pane's keys are shown, disabled, as a Footer shows them."""
    app = new_app(commands=Commands(FakeControl(), read_only=True, read_only_reason="--read-only"))
    async with app.run_test(size=SIZE) as pilot:
        feed(app, B.group_lag())
        await settle(pilot)
        bar, reference = await with_reference(pilot)
        await pilot.press("1")
        await settle(pilot)
        keys = {s.description: s for s in bar_keys(bar)}
        assert keys["Stop"].disabled and keys["Kill"].disabled, keys
        assert footer_keys(bar) == footer_keys(reference)
        stop = next(k for k in bar.query_children(FooterKey) if k.description == "Stop")
        assert stop.has_class("-disabled")
        await pilot.press("2")
        await settle(pilot)
        assert footer_keys(bar) == footer_keys(reference)
        assert not any(k.has_class("-disabled") for k in bar.query_children(FooterKey))


class Grouped(App[None]):
    """Bindings in a group: Footer shows them as one group, so the bar recomposes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "one", "One", group=Binding.Group("letters")),
        Binding("b", "two", "Two", group=Binding.Group("letters")),
        Binding("x", "ex", "Ex"),
    ]

    def compose(self) -> ComposeResult:
        yield KeyBar()

    def action_one(self) -> None: ...
    def action_two(self) -> None: ...
    def action_ex(self) -> None: ...


async def test_grouped_keys_are_composed_as_footer_does() -> None:
    app = Grouped()
    async with app.run_test() as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar)
        assert bar.specs() is None
        app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        labels = [str(c.render()) for c in bar.query("FooterLabel")]
        assert labels == ["letters"], labels
        assert [k.key for k in bar.query_children(FooterKey)] == ["x", "ctrl+p"]


async def test_the_start_composes_the_bar_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen refreshes its bindings several times while it starts (mount, focus, stack);
    Footer recomposed for each. The bar's keys are made once."""
    made: list[str] = []
    init = FooterKey.__init__

    def counting(self: FooterKey, *args: Any, **kwargs: Any) -> None:
        made.append(args[0])
        init(self, *args, **kwargs)

    monkeypatch.setattr(FooterKey, "__init__", counting)
    app = new_app(commands=Commands(FakeControl()))
    async with app.run_test(size=SIZE) as pilot:
        feed(app, B.group_lag())
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        shown_keys = [k.key for k in bar.query_children(FooterKey)]
        assert len(shown_keys) >= 5, shown_keys
        assert made == shown_keys

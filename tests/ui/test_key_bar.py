"""The key bar shows whole keys only, as many as fit (the focused pane's first), and updates them
in place: after each move it shows what a bar composed afresh would, without remounting."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from kconsole.commands import Commands
from kconsole.ui.widgets.footer import MORE, KeyBar, KeySpec, fit, shown
from tests.ui import builders as B
from tests.ui.conftest import FakeControl, feed, new_app, settle

SIZE = (160, 48)
EVERY_KEY = (200, 48)  # wide enough for every key of every pane: their counts differ


def bar_keys(bar: KeyBar) -> list[KeySpec]:
    return [shown(k) for k in bar.query_children(FooterKey)]


def footer_keys(footer: Footer) -> list[tuple[KeySpec, bool]]:
    """What a bar shows, compact or not, key by key."""
    return [(shown(k), k.has_class("-compact")) for k in footer.query_children(FooterKey)]


class Recomposed(KeyBar):
    """The reference: a KeyBar composed afresh on every change, as Footer does."""

    def bindings_changed(self, screen: object) -> None:
        self._bindings_ready = True
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def on_resize(self, _event: object) -> None:
        self.call_after_refresh(self.recompose)


async def with_reference(pilot: Pilot[None]) -> tuple[KeyBar, Footer]:
    screen = pilot.app.screen
    reference = Recomposed(id="reference")
    await screen.mount(reference)
    await settle(pilot)
    return screen.query_one(KeyBar), reference


async def test_every_move_shows_what_a_footer_would_and_keeps_the_keys() -> None:
    """Through every pane, the filter and back (commands present: the brokers pane adds its
    five keys, the groups pane one): the bar equals a freshly composed one after each move,
    and the keys already there are the same widgets, rewritten rather than mounted again."""
    app = new_app(commands=Commands(FakeControl()))
    async with app.run_test(size=EVERY_KEY) as pilot:
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
        assert "Stop" not in descriptions and "Leader" in descriptions


def spec(key: str, description: str, rank: int, action: str = "") -> KeySpec:
    return KeySpec(key, key, description, action or key, False, "", rank=rank)


def test_fit_leaves_out_the_app_keys_then_the_screens_last_first_and_says_more() -> None:
    specs = [
        spec("L", "Leader", 0),
        spec("R", "Reassign", 0),
        spec("/", "Filter", 1),
        spec("P", "Produce", 1),
        spec("q", "Quit", 2),
        spec("?", "Help", 2, action="help"),
    ]
    widths = [s.width(compact=False) for s in specs]
    assert widths == [10, 12, 10, 11, 8, 8]  # " L " + "Leader ", as FooterKey draws it
    assert fit(specs, sum(widths)) == specs  # all fit: nothing changes
    fitted = fit(specs, 10 + 12 + 10 + 8)
    assert [s.key for s in fitted] == ["L", "R", "/", "?"]
    assert fitted[-1].description == MORE
    assert [s.key for s in fit(specs, 17)] == ["?"]  # the help key stays, whatever the width


async def test_at_80_columns_each_pane_shows_its_own_keys_whole() -> None:
    """80x24: the partitions pane's L E U R and the brokers pane's s k p t D are in the bar,
    every key inside it whole, and "? more" says that the help has the rest."""
    app = new_app(commands=Commands(FakeControl()))
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, B.group_lag())
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        for pane, own in (("2", "LEUR"), ("1", "skptD"), ("3", "⏎")):
            await pilot.press(pane)
            await settle(pilot)
            keys = list(bar.query_children(FooterKey))
            shown_keys = [k.key_display for k in keys if not k.has_class("-command-palette")]
            assert shown_keys[: len(own)] == list(own), (pane, shown_keys)
            assert "?" in shown_keys, shown_keys
            regions = [k.region for k in keys]
            for key, region in zip(keys, regions, strict=True):
                whole = len(key.render().plain) + key.styles.gutter.width  # border, padding
                assert region.width == whole, (key.description, region)
                assert bar.region.contains_region(region), (key.description, region)
            assert not any(a.overlaps(b) for i, a in enumerate(regions) for b in regions[i + 1 :])
            help_key = next(k for k in keys if k.key_display == "?")
            assert help_key.description == MORE


async def test_a_disabled_key_is_shown_disabled_after_a_move() -> None:
    """Read-only: the brokers pane's keys are shown, disabled, as a composed bar shows them."""
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
        # The partitions pane's broker keys (its leader's, the controller's) are disabled too.
        disabled = {
            k.description for k in bar.query_children(FooterKey) if k.has_class("-disabled")
        }
        assert "Leader" in disabled and disabled <= {"Leader", "Controller"}, disabled


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

"""The key bar: Textual's Footer, fitted to its width, with its keys updated in place when the
focus moves.

Footer shows every key it is given on one line and lets the ones that do not fit fall off the
right edge, cut mid-label (at 80 columns the partitions pane's bar ended in "P P"). Here the
keys that do not fit are left out, whole: the focused widget's keys are kept first, then the
screen's, then the app's, and within those the first declared; the help key is always kept and
says "more" when keys were left out (the help lists them all, and the palette finds them).

Textual's Footer recomposes whenever the screen's bindings are refreshed, which happens on
every focus change: each tab unmounts every key and mounts new ones, and each new key has its
styles applied one by one. On the main screen that was most of a tab's cost (about 200 ms of
CPU on a slow core), and during a failover, with the observer's threads busy, a tab could take
over a second. Moving between panes mostly changes a few descriptions (the brokers pane adds its
four keys, the groups pane "Open group"), so the keys already mounted are rewritten in place,
the missing ones mounted and the extra ones removed. The result is the same as a recompose;
the tests compare the two after every move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual.screen import Screen


@dataclass(frozen=True)
class KeySpec:
    """What one key in the bar shows: the arguments Footer.compose gives a FooterKey."""

    key: str
    display: str
    description: str
    action: str
    disabled: bool
    tooltip: str
    rank: int = field(default=0, compare=False)
    """Which keys are left out first when they do not fit (the higher): 0 for the focused
    widget's, 1 for the screen's, 2 for the app's. Not part of what a key shows."""

    def width(self, compact: bool) -> int:
        """The cells the key takes in the bar (FooterKey's padding, and the compact bar's
        margin)."""
        key, description = cell_len(self.display), cell_len(self.description)
        if not description:
            return key + (1 if compact else 0)
        return key + description + (2 if compact else 3)

    def new(self) -> FooterKey:
        return FooterKey(
            self.key,
            self.display,
            self.description,
            self.action,
            disabled=self.disabled,
            tooltip=self.tooltip,
        )


def shown(key: FooterKey) -> KeySpec:
    """What a mounted key shows now."""
    tooltip = key.tooltip if isinstance(key.tooltip, str) else ""
    return KeySpec(key.key, key.key_display, key.description, key.action, key._disabled, tooltip)


HELP_ACTIONS = ("help", "app.help")
MORE = "more"
"""The help key's description when keys were left out."""


def fit(specs: Sequence[KeySpec], width: int, *, compact: bool = False) -> list[KeySpec]:
    """The keys of `specs` that fit in `width` cells, in their order: the highest rank, last
    declared, is left out first; the help key stays, saying MORE once any key is left out."""
    kept = list(specs)
    total = sum(s.width(compact) for s in kept)
    if total <= width:
        return kept
    droppable = sorted(
        (i for i, s in enumerate(specs) if s.action not in HELP_ACTIONS),
        key=lambda i: (-specs[i].rank, -i),
    )
    gone: set[int] = set()
    for i in droppable:
        if total <= width:
            break
        gone.add(i)
        total -= specs[i].width(compact)
    return [
        replace(s, description=MORE) if s.action in HELP_ACTIONS and s.description else s
        for i, s in enumerate(specs)
        if i not in gone
    ]


class KeyBar(Footer):
    """A Footer that shows whole keys only, as many as fit, and updates them in place when
    the screen's bindings change."""

    _update_pending = False  # an update is scheduled and has not run yet

    def all_specs(self) -> list[KeySpec] | None:
        """The keys Footer.compose would show now, besides the command palette's, in order;
        None where compose would group some (then the bar is composed as Footer does)."""
        first: dict[str, KeySpec] = {}
        screen, app = self.screen, self.app
        for node, binding, enabled, tooltip in screen.active_bindings.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            if binding.action not in first:  # compose shows the first binding of an action
                first[binding.action] = KeySpec(
                    binding.key,
                    app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    not enabled,
                    tooltip,
                    rank=2 if node is app else 1 if node is screen else 0,
                )
        return list(first.values())

    def specs(self) -> list[KeySpec] | None:
        """The keys the bar shows now (those that fit), besides the command palette's."""
        every = self.all_specs()
        if every is None or not self.size.width:
            return every
        return fit(every, self.size.width - self._palette_width(), compact=self.compact)

    def _palette_width(self) -> int:
        """The cells the command palette's key takes (docked right)."""
        for child in self.children:
            if child.has_class("-command-palette") and child.outer_size.width:
                return child.outer_size.width
        if not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return 0
        active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if active is None:
            return 0
        # Drawn compact whatever the bar (Footer does not bind it), after a border, with a
        # padding on the right unless the bar is compact.
        binding = active.binding
        drawn = cell_len(self.app.get_key_display(binding)) + 1 + cell_len(binding.description)
        return drawn + 1 + (0 if self.compact else 1)

    def compose(self) -> ComposeResult:
        specs = self.specs() if self._bindings_ready else None
        if specs is None:
            yield from super().compose()
            return
        self.styles.grid_size_columns = len(specs)
        for spec in specs:
            yield spec.new().data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if active is not None:  # as Footer.compose makes it
                binding = active.binding
                yield FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    classes="-command-palette",
                    disabled=not active.enabled,
                    tooltip=binding.tooltip or binding.description,
                )

    def on_resize(self, _event: Resize) -> None:
        self._schedule_update()  # another width fits other keys

    def _schedule_update(self) -> None:
        if not self._update_pending:
            self._update_pending = True
            self.call_after_refresh(self._update_keys)

    def bindings_changed(self, screen: Screen[object]) -> None:
        # As Footer does, but the signals that come before the update ran share it: the screen
        # publishes several while it starts (mount, focus, stack), and Footer recomposed for
        # each of them.
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        self._schedule_update()

    def watch_compact(self, compact: bool) -> None:
        # Footer.compose binds its keys' compact to the bar's; keys mounted here follow it too.
        for key in self.query_children(FooterKey):
            key.compact = compact

    async def _update_keys(self) -> None:
        self._update_pending = False
        if not self.is_attached:
            return
        specs = self.specs()
        palette = [c for c in self.children if c.has_class("-command-palette")]
        keys = [c for c in self.children if isinstance(c, FooterKey) and c not in palette]
        if not keys or specs is None or len(keys) + len(palette) != len(self.children):
            await self.recompose()  # the first time, or grouped keys: what Footer does
            return
        now = [shown(k) for k in keys]
        if now == specs:
            return
        self.styles.grid_size_columns = len(specs)
        for key, was, spec in zip(keys, now, specs, strict=False):
            if was != spec:
                _rewrite(key, spec)
        if len(specs) > len(keys):
            new = [spec.new() for spec in specs[len(keys) :]]
            for key in new:  # as Footer.compose binds it; its watcher sets the class on mount
                key.set_reactive(FooterKey.compact, self.compact)
            self.mount_all(new, before=palette[0] if palette else None)
        for extra in keys[len(specs) :]:
            extra.remove()


def _rewrite(key: FooterKey, spec: KeySpec) -> None:
    width_changed = (spec.display, spec.description) != (key.key_display, key.description)
    key.key = spec.key
    key.key_display = spec.display
    key.description = spec.description
    key.action = spec.action
    key._disabled = spec.disabled
    key.set_class(spec.disabled, "-disabled")
    key.tooltip = spec.tooltip or None
    key.refresh(layout=width_changed)

"""The key bar: Textual's Footer, with its keys updated in place when the focus moves.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING

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


class KeyBar(Footer):
    """A Footer whose keys are updated in place when the screen's bindings change."""

    _update_pending = False  # an update is scheduled and has not run yet

    def specs(self) -> list[KeySpec] | None:
        """The keys Footer.compose would show now, besides the command palette's, in order;
        None where compose would group some (then the bar is recomposed, as Footer does)."""
        first: dict[str, KeySpec] = {}
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            if binding.action not in first:  # compose shows the first binding of an action
                first[binding.action] = KeySpec(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    not enabled,
                    tooltip,
                )
        return list(first.values())

    def bindings_changed(self, screen: Screen[object]) -> None:
        # As Footer does, but the signals that come before the update ran share it: the screen
        # publishes several while it starts (mount, focus, stack), and Footer recomposed for
        # each of them.
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not self._update_pending:
            self._update_pending = True
            self.call_after_refresh(self._update_keys)

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

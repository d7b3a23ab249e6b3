"""Pane chrome and the two non-table panes: the header line and the controller."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.geometry import Region
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Static

from kconsole.models import (
    METADATA_SOURCES,
    ClusterMode,
    ClusterSnapshot,
    SourceHealth,
    SourceName,
)
from kconsole.ui import format as fmt
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.quorum import quorum_view

# Brokers, the controller and partitions come from ZooKeeper; from the Admin API without it.
CLUSTER_SOURCES = (SourceName.ZOOKEEPER, SourceName.ADMIN)
GROUP_SOURCES = (SourceName.GROUPS,)


def pane_source(snap: ClusterSnapshot | None, names: tuple[SourceName, ...]) -> SourceHealth | None:
    """The health of the first of `names` the snapshot reports."""
    if snap is None:
        return None
    return next((h for n in names if (h := snap.source(n)) is not None), None)


def stale_text(health: SourceHealth, now: float) -> str:
    """'STALE 12s: connection refused' (age of the last good data)."""
    age = health.age(now)
    since = f" {fmt.age(age)}" if age is not None else ""
    return f"STALE{since}: {health.error}" if health.error else f"STALE{since}"


def set_border(widget: Widget, *, title: str | None = "", subtitle: str | None = "") -> None:
    """Set a border title or subtitle ("" leaves it alone) only when it changes, and repaint
    only the border line it is on: Textual repaints the whole widget, table and all, on every
    assignment, even of the same text (the subtitle was set once a second: most of the idle
    console's painting; the partitions pane's counts change with every snapshot of a
    failover, and repainting the whole pane for them was a third of its drawing)."""
    last: dict[str, str | None] = widget.__dict__.setdefault("_kconsole_border", {})
    if title != "" and last.get("title", "") != title:
        last["title"] = title
        _set_border_line(widget, "border_title", title, top=True)
    if subtitle != "" and last.get("subtitle", "") != subtitle:
        last["subtitle"] = subtitle
        _set_border_line(widget, "border_subtitle", subtitle, top=False)


def _set_border_line(widget: Widget, attr: str, text: str | None, *, top: bool) -> None:
    """What Textual's border_title / border_subtitle setter does (textual 8.2), with a repaint
    of just the top or bottom border line; a plain assignment where that does not apply."""
    descriptor = inspect.getattr_static(Widget, attr, None)
    internal = getattr(descriptor, "_internal_name", None)
    height, width = widget.outer_size.height, widget.outer_size.width
    if internal is None or not widget.is_mounted or height < 2:
        setattr(widget, attr, text)
        return
    value = None if text is None else widget.render_str(text).expand_tabs(4).split()[0]
    setattr(widget, internal, value)
    offset = widget.content_offset  # refresh() regions are relative to the content
    widget.refresh(Region(-offset.x, (0 if top else height - 1) - offset.y, width, 1))


class Pane(Vertical):
    """A bordered pane that marks itself stale (class `-stale`, subtitle) while its source fails."""

    def __init__(
        self,
        *children: Widget,
        title: str,
        sources: tuple[SourceName, ...] = (),
        id: str | None = None,
        kraft_sources: tuple[SourceName, ...] | None = None,
        note: Callable[[ClusterSnapshot | None], str | None] | None = None,
    ) -> None:
        super().__init__(*children, id=id, classes="pane")
        self.sources = sources
        # A line of the pane's own for the bottom border, after the staleness (markup; None:
        # nothing): the brokers pane's network faults in force.
        self.note = note
        self.kraft_sources = sources if kraft_sources is None else kraft_sources
        """What the pane shows comes from these on a KRaft cluster (the quorum pane)."""
        self.border_title = title

    def on_mount(self) -> None:
        if self.sources:
            subscribe(self, "snapshot", self.mark_health, init=True)
            subscribe(self, "now", self.mark_health, init=False)

    def mark_health(self) -> None:
        """Show or clear the stale marker from the latest snapshot.

        A pane with a fallback source (ZooKeeper, then the Admin API) is stale only when every
        source fails; while it is served by the fallback it says so, without the alarm.
        """
        view = state(self)
        sources = self.sources
        if view.snapshot is not None and view.snapshot.mode is ClusterMode.KRAFT:
            sources = self.kraft_sources
        health = pane_source(view.snapshot, sources)
        stale = health is not None and not health.ok
        fallback = None
        if stale and view.snapshot is not None:
            fallback = next(
                (h for n in sources[1:] if (h := view.snapshot.source(n)) and h.ok), None
            )
        self.set_class(stale and fallback is None, "-stale")
        subtitle = None
        if stale and fallback is not None and health is not None:
            label = SOURCE_LABELS.get(fallback.name, (fallback.name.value,))[0]
            down = SOURCE_LABELS.get(health.name, (health.name.value,))[0]
            subtitle = escape(f"via {label} · {down} down: {health.error}")
        elif stale and health is not None:
            snap = view.snapshot
            if (
                snap is not None
                and snap.unreached
                and (snap.refused or snap.never_answered)
                and health.name in METADATA_SOURCES
            ):
                # Why nothing was ever asked (a refused login, nothing listening at the
                # bootstrap servers), not the first source's error (the default ZooKeeper,
                # maybe not this cluster's at all).
                health = replace(health, error=snap.unreached)
            subtitle = escape(stale_text(health, view.now))
        elif health is not None and health.degraded:
            subtitle = escape(f"degraded: {health.error}")
        note = self.note(view.snapshot) if self.note is not None else None
        if note:
            subtitle = f"{subtitle} · {note}" if subtitle else note
        set_border(self, subtitle=subtitle)


class Line(Static):
    """Text in a box whose size the stylesheet fixes: re-rendered only when the text changes,
    and never with a layout pass (the console idles at a poll per second; a layout of the
    whole screen per poll was most of its idle cost, bench/results/idle.md)."""

    _shown: Text | None = None

    def show(self, text: Text) -> None:
        """Show `text` unless it is what is shown already."""
        if self._shown is not None and fmt.same(self._shown, text):
            return
        self._shown = text
        self.update(text, layout=False)


class HeaderLine(Line):
    """One line: cluster id, each source's health and data age, the refresh interval."""

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)
        subscribe(self, "now", self.redraw, init=False)

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Render for the current width: the long form if it fits, else the short one."""
        view = state(self)
        args = (view.snapshot, view.now, view.refresh_s, view.group_refresh_s, view.title)
        door = actions(self).commands
        read_only = door is not None and door.read_only
        # Each form shorter than the one before; the first that fits is shown. A ZooKeeper
        # header keeps its two forms (the long one, else the compact one, cut at the edge).
        text = Text()
        zk = view.snapshot is None or view.snapshot.mode is ClusterMode.ZOOKEEPER
        for compact, tight in ZK_HEADER_FORMS if zk else HEADER_FORMS:
            text = header_text(*args, compact=compact, read_only=read_only, tight=tight)
            if not self.size.width or cell_len(text.plain) <= self.size.width:
                break
        self.show(text)


HEADER_FORMS = ((False, 0), (False, 1), (True, 1), (True, 2), (True, 3), (True, 4), (True, 5))
"""(compact, tight) from the longest form to the shortest: see header_text."""
ZK_HEADER_FORMS = ((False, 0), (True, 1))


SOURCE_LABELS = {
    SourceName.ZOOKEEPER: ("ZooKeeper", "zk"),
    SourceName.QUORUM: ("quorum", "quorum"),
    SourceName.ADMIN: ("Admin API", "admin"),
    SourceName.GROUPS: ("groups", "groups"),
}
ZK_HEADER_SOURCES = (SourceName.ZOOKEEPER, SourceName.ADMIN, SourceName.GROUPS)
KRAFT_HEADER_SOURCES = (SourceName.QUORUM, SourceName.ADMIN, SourceName.GROUPS)


def header_text(
    snap: ClusterSnapshot | None,
    now: float,
    refresh_s: float,
    group_refresh_s: float,
    title: str,
    *,
    compact: bool,
    read_only: bool = False,
    tight: int = 0,
) -> Text:
    """The header line's content. A ZooKeeper-mode header names the mode by its ZooKeeper
    source; any other says its mode (KRaft: with metadata.version and kraft.version). `tight`
    shortens the mode from 1 on (its labels go), and when `compact` from 2 on (the mode
    shorter still), 3 (the cluster id cut), 4 (no refresh interval) and 5 (no cluster id)."""
    sep = (" │ ", fmt.DIM)
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    if not compact:
        out.append(f" {title}", "bold")
        out.append(*sep)
    else:
        out.append(" ")
    if read_only:  # first, so that no width cuts it off
        out.append(" READ-ONLY ", "bold #1a1a1a on #6cb6ff")
        out.append(*sep)
    if snap is None:
        out.append("waiting for the first snapshot…", fmt.DIM)
        return out
    badge = not_asked_badge(snap, now, compact=compact and tight >= 3)
    if badge.plain:  # first too: it says why every figure after it is unknown or old
        out.append_text(badge)
        out.append(*sep)
    if not compact:
        out.append("cluster ", fmt.DIM)
    cluster_id = snap.cluster_id or "?"
    if compact and tight >= 3 and len(cluster_id) > 9:
        cluster_id = cluster_id[:8] + "…"
    if not compact or tight < 5:
        out.append(cluster_id, "bold" if snap.cluster_id else fmt.DIM)
    sources = ZK_HEADER_SOURCES
    if snap.mode is not ClusterMode.ZOOKEEPER:
        if not compact or tight < 5:
            out.append(*sep)
        out.append_text(mode_text(snap, min(tight, 1) if not compact else min(tight, 2)))
        if snap.mode is ClusterMode.KRAFT:
            sources = KRAFT_HEADER_SOURCES
    for name in sources:
        out.append(*sep)
        label = SOURCE_LABELS[name][1 if compact else 0]
        out.append(f"{label} ")
        health = snap.source(name)
        # ZooKeeper is watched, not polled: its age is "last change", never "late".
        polled = {
            SourceName.ADMIN: refresh_s,
            SourceName.QUORUM: refresh_s,
            SourceName.GROUPS: group_refresh_s,
        }.get(name)
        out.append_text(_health(health, now, polled))
    if compact and tight >= 4:
        return out
    out.append(*sep)
    every = f"{fmt.interval(refresh_s)}/{fmt.interval(group_refresh_s)}"
    out.append(f"⟳ {every}" if compact else f"refresh {every}", fmt.DIM)
    return out


KRAFT_VERSIONS = {0: "static quorum", 1: "dynamic quorum"}
ALARM = "bold #1a1a1a on #f0b429"  # amber: not known, which is not broken


def not_asked_label(snap: ClusterSnapshot, *, compact: bool = False) -> str:
    """What stopped kconsole asking the cluster, in capitals: its TLS handshake or its login
    refused, or nothing of it answering; "" when it was asked."""
    if snap.refused:
        if snap.refused.startswith("TLS handshake"):
            return "TLS REFUSED" if compact else "TLS HANDSHAKE REFUSED"
        return "LOGIN REFUSED"
    if snap.unreached:
        return "UNREACHABLE" if compact else "CANNOT REACH THE CLUSTER"
    return ""


def not_asked_badge(snap: ClusterSnapshot, now: float, *, compact: bool = False) -> Text:
    """The header's alarm while the cluster cannot be asked (see not_asked_label), with how
    long since a source of its metadata last answered; empty when it was asked."""
    label = not_asked_label(snap, compact=compact)
    if not label:
        return Text()
    out = Text.assemble((f" {label} ", ALARM))
    if snap.unreached:
        last = snap.last_answer
        if last is None:
            out.append(" never answered" if not compact else " never", fmt.WARN)
        else:
            out.append(
                f" {fmt.age(now - last)}" if compact else f" last answer {fmt.age(now - last)} ago",
                fmt.WARN,
            )
    return out


def mode_text(snap: ClusterSnapshot, short: int = 0) -> Text:
    """The cluster's mode for the header; on KRaft its metadata.version and kraft.version
    (`short` 0: spelled out, with the other finalized feature levels; 1: shorter, 2:
    shortest). What was not read is a "?"."""
    if snap.mode is ClusterMode.UNKNOWN:
        return Text("mode ?", fmt.WARN)
    if snap.mode is ClusterMode.ZOOKEEPER:
        return Text("ZooKeeper", fmt.BOLD)
    out = Text("KRaft", fmt.BOLD, end="")
    f = snap.features
    mv = f.metadata_version if f is not None else None
    if mv is None and f is not None and f.metadata_version_level is not None:
        mv = f"level {f.metadata_version_level}"
    kv = f.kraft_version if f is not None else None
    quorum = KRAFT_VERSIONS.get(kv, f"kraft.version {kv}") if kv is not None else None
    if short == 0:
        out.append(" metadata.version ", fmt.DIM)
        out.append(mv or "?", fmt.PLAIN if mv else fmt.WARN)
        out.append(" kraft.version ", fmt.DIM)
        out.append("?" if kv is None else str(kv), fmt.PLAIN if kv is not None else fmt.WARN)
        if quorum is not None and kv in KRAFT_VERSIONS:
            out.append(f" ({quorum})", fmt.DIM)
        for o in f.others if f is not None else ():  # what else the cluster can do
            out.append(f" {o.name.removesuffix('.version')} ", fmt.DIM)
            out.append(str(o.level), fmt.PLAIN if o.level else fmt.DIM)
        return out
    out.append(" ")
    out.append(mv or "?", fmt.PLAIN if mv else fmt.WARN)
    out.append(" ")
    if kv is None:
        out.append("kv ?", fmt.WARN)
    elif short == 1:
        out.append(quorum or "?", fmt.DIM)
    else:
        out.append({0: "static", 1: "dynamic"}.get(kv, f"kv {kv}"), fmt.DIM)
    return out


def _health(health: SourceHealth | None, now: float, every: float | None) -> Text:
    if health is None:
        return Text(fmt.NONE, fmt.DIM)
    age = health.age(now)
    if not health.ok:
        since = "no data" if age is None else fmt.age(age)
        return Text(f" STALE {since} ", "bold #1a1a1a on #f0b429")
    # Still "ok" but late by a few polls: worth an amber age, not an alarm.
    late = every is not None and age is not None and age > 3 * max(every, 1.0)
    if health.degraded:  # answering, but part of it unread: the pane's subtitle says which
        return Text.assemble(("degraded", fmt.WARN), " ", (fmt.age(age), fmt.DIM))
    return Text.assemble(("ok", fmt.GOOD), " ", (fmt.age(age), fmt.WARN if late else fmt.DIM))


class ControllerView(Line):
    """The active controller; a loud alert when there is none. On a KRaft cluster the
    metadata quorum instead (its leader is the active controller): kconsole.ui.quorum."""

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)
        subscribe(self, "now", self.redraw, init=False)

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Render from the latest snapshot."""
        view = state(self)
        snap = view.snapshot
        pane = self.parent if isinstance(self.parent, Widget) else None
        if snap is not None and snap.mode is ClusterMode.KRAFT:
            size = self.content_size
            shown = quorum_view(snap, view.now, size.width or 60, size.height or 12)
            self.set_class(shown.alert, "-alert")
            if pane is not None:
                set_border(pane, title=shown.title)
            self.show(shown.text)
            return
        if pane is not None:
            set_border(pane, title="Controller")
        lost = snap is not None and snap.controller.id is None
        unknown = lost and snap is not None and controller_unknown(snap)
        self.set_class(lost and not unknown, "-alert")
        self.set_class(unknown, "-unknown")
        self.show(controller_text(snap, view.now, self.content_size.width or 28))


def controller_unknown(snap: ClusterSnapshot) -> bool:
    """No controller shown because none was asked: nothing of the cluster's metadata has
    answered yet, or nothing answers now (not "no active controller")."""
    return bool(snap.unreached) or snap.never_answered


def controller_text(snap: ClusterSnapshot | None, now: float, width: int = 28) -> Text:
    """The controller pane's content (`width`: its columns, for the shorter words)."""
    if snap is None:
        return Text("waiting…", fmt.DIM)
    c = snap.controller
    since = fmt.age(None if c.since is None else now - c.since)
    epoch = fmt.NONE if c.epoch is None else str(c.epoch)
    previous = fmt.NONE if c.previous is None else f"broker {c.previous}"
    if c.id is None and controller_unknown(snap):
        # Not asked: which broker controls the cluster is unknown, not "none".
        narrow = width < len("CANNOT REACH THE CLUSTER")
        label = not_asked_label(snap, compact=narrow) or "WAITING FOR THE CLUSTER"
        out = Text(label + "\n", "bold")
        if snap.start_hint:  # said whole in a notification; here what to type
            out.append("run: " if not narrow else "", fmt.DIM)
            out.append("kconsole cluster up\n", "bold")
        out.append("controller unknown\n")
        last = snap.last_answer
        if not snap.unreached:
            out.append("no answer yet", fmt.DIM)  # the first reads are under way
        elif last is None:
            out.append("never answered")
        else:
            out.append(f"last answer {fmt.age(now - last)} ago")
        return out
    if c.id is None:
        lines = ["NO ACTIVE CONTROLLER"]
        if c.since is not None:
            lines.append(f"for {since}")
        if c.previous is not None:
            lines.append(f"was {previous}")
        if c.epoch is not None:
            lines.append(f"last epoch {epoch}")
        return Text("\n".join(lines))
    return Text.assemble(
        ("★ ", "bold #f0b429"),
        (f"broker {c.id}\n", "bold"),
        ("epoch ", fmt.DIM),
        f"{epoch}\n",
        ("since ", fmt.DIM),
        f"{since}\n",
        ("previous ", fmt.DIM),
        previous,
    )

"""The partitions table refreshes only what changed (bench/results/scale.md); these tests hold
it to showing exactly what a rebuild from scratch would, through a long seeded sequence of
cluster changes and view changes."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Sequence

import pytest
from rich.text import Text

from kconsole.models import (
    BrokerState,
    ClusterSnapshot,
    Partition,
    PartitionChanges,
    Topic,
    aligned_changes,
)
from kconsole.ui import rows
from kconsole.ui.widgets.tables import PartitionsTable
from tests.ui.builders import T0, brokers, healthy
from tests.ui.conftest import FakeObserver, feed, new_app

GENS = itertools.count(1)


def shown(table: PartitionsTable) -> list[tuple[str, ...]]:
    return [tuple(str(c) for c in table.get_row(key)) for key in table.row_keys]


def expected(snap: ClusterSnapshot, view: rows.PartitionView) -> list[tuple[str, ...]]:
    return [tuple(c.plain for c in cells) for cells in rows.partition_rows(snap, view).values()]


def expected_widths(snap: ClusterSnapshot, view: rows.PartitionView) -> list[int]:
    """Each column as wide as its widest cell or its label, measured on the drawn cells."""
    built = list(rows.partition_rows(snap, view).values())
    return [
        max([len(label), *(cells[i].cell_len for cells in built)])
        for i, (_, label) in enumerate(rows.PARTITION_COLUMNS)
    ]


def step(rng: random.Random, snap: ClusterSnapshot, i: int) -> ClusterSnapshot:
    """One random change, as the observer would publish it (unchanged partitions kept)."""
    parts = list(snap.partitions)
    kind = rng.choice(["leader", "isr", "leader", "nothing", "broker", "topic", "reassign"])
    if kind == "leader":
        for _ in range(rng.randint(1, 5)):
            k = rng.randrange(len(parts))
            p = parts[k]
            parts[k] = dataclasses.replace(p, leader=rng.choice([*p.replicas, -1]))
    elif kind == "isr":
        k = rng.randrange(len(parts))
        p = parts[k]
        parts[k] = dataclasses.replace(p, isr=tuple(rng.sample(p.replicas, rng.randint(0, 3))))
    elif kind == "reassign":
        k = rng.randrange(len(parts))
        parts[k] = dataclasses.replace(parts[k], adding=(rng.randint(1, 3),) if i % 2 else ())
    elif kind == "topic":
        name = f"new-{i}"
        if any(p.topic.startswith("new-") for p in parts) and rng.random() < 0.5:
            gone = next(p.topic for p in parts if p.topic.startswith("new-"))
            parts = [p for p in parts if p.topic != gone]
        else:
            parts += [Partition(name, n, 1, (1, 2, 3), (1, 2, 3)) for n in range(3)]
    known = {t.name: t for t in snap.topics}
    names = sorted({p.topic for p in parts})
    topics = tuple(known.get(n) or Topic(n) for n in names)
    bs = snap.brokers
    if kind == "broker":
        bs = brokers(b3=BrokerState.DOWN) if i % 2 else brokers()
    new_parts = tuple(sorted(parts, key=lambda p: (p.topic, p.partition)))
    gen, changes = snap.partitions_gen, snap.partition_changes
    if new_parts == snap.partitions:
        new_parts = snap.partitions
    else:  # as SnapshotBuilder says what it built again (or cannot: a topic came or went)
        gen = next(GENS)
        pairs = aligned_changes(snap.partitions, new_parts)
        changes = None
        if pairs is not None:
            at = [
                i for i, (a, b) in enumerate(zip(snap.partitions, new_parts, strict=True)) if a != b
            ]
            # Now and then counted from a snapshot the table never saw (a newer message
            # replaced it in the app's queue): the table must not trust those.
            base = snap.partitions_gen if rng.random() < 0.8 else -1
            changes = PartitionChanges(base, tuple(at))
    return dataclasses.replace(
        snap,
        taken_at=snap.taken_at + 1,
        partitions=new_parts,
        topics=topics,
        brokers=bs,
        seq=snap.seq + 1,
        partitions_gen=gen,
        partition_changes=changes,
    )


VIEWS = [
    rows.PartitionView(),
    rows.PartitionView(sort="leader"),
    rows.PartitionView(unhealthy_only=True),
    rows.PartitionView(text="new", sort="flags", reverse=True),
    rows.PartitionView(show_internal=True, sort="isr"),
]


async def test_incremental_refresh_shows_what_a_rebuild_would() -> None:
    rng = random.Random(1414)
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        snap = dataclasses.replace(healthy(T0), seq=1, partitions_gen=next(GENS))
        feed(app, snap)
        await pilot.pause()
        for i in range(75):  # five views, each for 15 random changes
            if i % 15 == 14:
                table.view = VIEWS[(i // 15) % len(VIEWS)]
            snap = step(rng, snap, i)
            feed(app, snap)
            await pilot.pause()
            assert shown(table) == expected(snap, table.view), f"step {i}"
            assert table.counts == rows.count_partitions(snap, table.view), f"step {i}"
            assert table.column_widths == expected_widths(snap, table.view), f"step {i}"


async def test_an_unchanged_poll_touches_no_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a changed partition's row is measured again (and drawn again, if on screen)."""
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        snap = dataclasses.replace(healthy(T0), seq=1)
        feed(app, snap)
        await pilot.pause()
        measured: list[str] = []
        original = rows.partition_widths

        def counting(
            snap: ClusterSnapshot,
            p: Partition,
            flags: Sequence[str] | None = None,
            elr: bool = False,
        ) -> tuple[int, ...]:
            measured.append(p.key)
            return original(snap, p, flags, elr)

        monkeypatch.setattr(rows, "partition_widths", counting)
        feed(app, dataclasses.replace(snap, taken_at=T0 + 1, seq=2))
        await pilot.pause()
        assert measured == []
        moved = dataclasses.replace(snap.partitions[0], leader=snap.partitions[0].replicas[1])
        feed(
            app,
            dataclasses.replace(
                snap, taken_at=T0 + 2, seq=3, partitions=(moved, *snap.partitions[1:])
            ),
        )
        await pilot.pause()
        assert measured == [moved.key]
        assert table.get_cell(moved.key, "leader").plain == str(moved.leader)


def big(n: int) -> ClusterSnapshot:
    """`n` partitions of topics of 100, RF 3 on the three brokers."""
    parts = tuple(
        Partition(f"t{t:03d}", p, r[0], r, r)
        for t in range(n // 100)
        for p in range(100)
        for r in [tuple((p + i + t) % 3 + 1 for i in range(3))]
    )
    topics = tuple(Topic(name) for name in sorted({p.topic for p in parts}))
    return dataclasses.replace(healthy(T0), partitions=parts, topics=topics, seq=1)


async def test_only_rows_on_screen_are_drawn() -> None:
    """10,000 partitions: the first snapshot and a third of the leaders moving draw only the
    rows on screen; scrolling draws the rows it brings into view."""
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        drawn: list[str] = []
        original = table.render_cells

        def counting(key: str, item: Partition) -> list[Text]:
            drawn.append(key)
            return original(key, item)

        table.render_cells = counting  # type: ignore[method-assign]
        snap = big(10_000)
        feed(app, snap)
        await pilot.pause()
        assert table.row_count == 10_000
        on_screen = table.scrollable_content_region.height - 1  # below the header
        assert 0 < len(drawn) <= on_screen
        assert drawn == table.row_keys[: len(drawn)]
        drawn.clear()
        third = tuple(
            dataclasses.replace(p, leader=p.replicas[1]) if i % 3 == 0 else p
            for i, p in enumerate(snap.partitions)
        )
        feed(app, dataclasses.replace(snap, partitions=third, taken_at=T0 + 1, seq=2))
        await pilot.pause()
        assert set(drawn) == {p.key for p in third[:on_screen:3]}
        assert table.get_cell(third[0].key, "leader").plain == str(third[0].replicas[1])
        drawn.clear()
        table.focus()
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_key == third[-1].key
        assert third[-1].key in drawn and len(drawn) <= on_screen


async def test_keys_move_the_cursor_and_the_view() -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        feed(app, big(300))
        await pilot.pause()
        table.focus()
        height = table.scrollable_content_region.height

        def screen_rows() -> list[str]:
            """The rows as drawn: topic and partition of every line below the header."""
            lines = [table.render_line(y).text.split() for y in range(1, height)]
            return [f"{words[0]}/{words[1]}" for words in lines if words]

        assert screen_rows() == table.row_keys[: height - 1]
        await pilot.press("down", "down")
        assert table.cursor_key == table.row_keys[2]
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_key in screen_rows()
        assert screen_rows()[0] != table.row_keys[0]
        await pilot.press("end")
        await pilot.pause()
        assert screen_rows()[-1] == table.row_keys[-1] == table.cursor_key
        await pilot.press("home")
        await pilot.pause()
        assert screen_rows()[0] == table.row_keys[0] == table.cursor_key


async def test_a_change_marks_only_the_lines_in_view() -> None:
    """A changed row marks its line for redrawing only while it is in view (marking a line
    costs as much as drawing it); a row changed out of view shows its new value when it is
    scrolled into view."""
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        snap = big(1_000)
        parts = list(snap.partitions)
        # One leader already off its preferred replica: the flags column is as wide as a
        # moved leader makes it (a wider column redraws the whole table).
        parts[950] = dataclasses.replace(parts[950], leader=parts[950].replicas[1])
        snap = dataclasses.replace(snap, partitions=tuple(parts))
        feed(app, snap)
        await pilot.pause()
        marked: list[int] = []
        original = table.refresh_line

        def marking(y: int) -> PartitionsTable:
            marked.append(y)
            return original(y)

        table.refresh_line = marking  # type: ignore[method-assign]
        for k in (1, 2, 900):  # two rows in view, one far below it
            parts[k] = dataclasses.replace(parts[k], leader=parts[k].replicas[1])
        feed(app, dataclasses.replace(snap, partitions=tuple(parts), taken_at=T0 + 2, seq=3))
        await pilot.pause()
        assert sorted(marked) == [table.get_row_index(parts[k].key) + 1 for k in (1, 2)]

        def leader_on_screen(key: str) -> str:
            y = table.get_row_index(key) + 1 - table.scroll_offset.y
            words = table.render_line(y).text.split()
            assert f"{words[0]}/{words[1]}" == key
            return words[2]

        assert leader_on_screen(parts[1].key) == str(parts[1].replicas[1])
        table.scroll_to(y=table.get_row_index(parts[900].key) - 5, animate=False)
        await pilot.pause()
        assert leader_on_screen(parts[900].key) == str(parts[900].replicas[1])


class PreferringObserver(FakeObserver):
    """Also told which partitions are on screen (kconsole.source.Prefers)."""

    def __init__(self) -> None:
        super().__init__()
        self.told: list[frozenset[tuple[str, int]]] = []

    def prefer(self, partitions: frozenset[tuple[str, int]]) -> None:
        self.told.append(partitions)


async def test_the_observer_is_told_which_partitions_are_on_screen() -> None:
    """In a burst the observer reads the rows in view first: the app tells it which they are
    when the rows, the scroll position or the size change (and only then)."""
    observer = PreferringObserver()
    app = new_app(observer)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        snap = big(1_000)
        feed(app, snap)
        await pilot.pause()

        def in_view() -> frozenset[tuple[str, int]]:
            top, height = round(table.scroll_offset.y), table.scrollable_content_region.height
            keys = table.row_keys[top : top + height - 1]
            return frozenset((k.split("/")[0], int(k.split("/")[1])) for k in keys)

        assert observer.told and observer.told[-1] == in_view()
        assert ("t000", 0) in observer.told[-1] and ("t009", 99) not in observer.told[-1]
        told = len(observer.told)
        moved = dataclasses.replace(snap.partitions[0], leader=snap.partitions[0].replicas[1])
        parts = (moved, *snap.partitions[1:])
        feed(app, dataclasses.replace(snap, partitions=parts, taken_at=T0 + 1, seq=2))
        await pilot.pause()
        assert len(observer.told) == told  # the same rows in view: nothing to say
        table.focus()
        await pilot.press("end")
        await pilot.pause()
        assert ("t009", 99) in observer.told[-1] and observer.told[-1] == in_view()
        await pilot.resize_terminal(160, 30)
        await pilot.pause()
        assert observer.told[-1] == in_view()

"""The partitions table refreshes only what changed (bench/results/scale.md); these tests hold
it to showing exactly what a rebuild from scratch would, through a long seeded sequence of
cluster changes and view changes."""

from __future__ import annotations

import dataclasses
import random

from kconsole.models import BrokerState, ClusterSnapshot, Partition, Topic
from kconsole.ui import rows
from kconsole.ui.widgets.tables import PartitionsTable
from tests.ui.builders import T0, brokers, healthy
from tests.ui.conftest import feed, new_app


def shown(table: PartitionsTable) -> list[tuple[str, ...]]:
    return [tuple(str(c) for c in table.get_row(key)) for key in table.row_keys]


def expected(snap: ClusterSnapshot, view: rows.PartitionView) -> list[tuple[str, ...]]:
    return [tuple(c.plain for c in cells) for cells in rows.partition_rows(snap, view).values()]


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
    if new_parts == snap.partitions:
        new_parts = snap.partitions
    return dataclasses.replace(
        snap,
        taken_at=snap.taken_at + 1,
        partitions=new_parts,
        topics=topics,
        brokers=bs,
        seq=snap.seq + 1,
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
        snap = dataclasses.replace(healthy(T0), seq=1)
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


async def test_an_unchanged_poll_touches_no_row() -> None:
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(PartitionsTable)
        snap = dataclasses.replace(healthy(T0), seq=1)
        feed(app, snap)
        await pilot.pause()
        writes: list[str] = []
        original = table.update_cell

        def counting(row_key: object, column_key: object, *a: object, **kw: object) -> None:
            writes.append(f"{row_key}")
            original(row_key, column_key, *a, **kw)  # type: ignore[arg-type]

        table.update_cell = counting  # type: ignore[method-assign]
        feed(app, dataclasses.replace(snap, taken_at=T0 + 1, seq=2))
        await pilot.pause()
        assert writes == []
        moved = dataclasses.replace(snap.partitions[0], leader=snap.partitions[0].replicas[1])
        feed(
            app,
            dataclasses.replace(
                snap, taken_at=T0 + 2, seq=3, partitions=(moved, *snap.partitions[1:])
            ),
        )
        await pilot.pause()
        assert set(writes) == {moved.key}

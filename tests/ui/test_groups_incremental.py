"""The groups pane redraws only the groups that changed (and those showing an age); these tests
hold it to showing exactly what a rebuild from scratch shows, through a seeded sequence of
group polls and snapshots from other sources."""

from __future__ import annotations

import dataclasses
import random

import pytest

from kconsole.models import ClusterSnapshot, Group, GroupPartition
from kconsole.observer import _same_where_equal
from kconsole.ui import rows
from kconsole.ui.widgets.tables import GroupsTable
from tests.ui.builders import T0, group, healthy
from tests.ui.conftest import feed, new_app


def shown(table: GroupsTable) -> list[tuple[str, ...]]:
    return [tuple(str(c) for c in table.get_row(key)) for key in table.row_keys]


def expected(snap: ClusterSnapshot) -> list[tuple[str, ...]]:
    return [tuple(c.plain for c in cells) for cells in rows.group_rows(snap).values()]


def poll(rng: random.Random, groups: tuple[Group, ...], i: int, at: float) -> tuple[Group, ...]:
    """One group poll as the observer publishes it: a fresh reading of every group, equal ones
    kept as the objects they were (observer._same_where_equal)."""
    fresh = []
    for g in groups:
        roll = rng.random()
        if roll < 0.15:  # its lag moved
            g = group(g.group_id, tuple(rng.randint(0, 900) for _ in range(4)))
        elif roll < 0.22:  # the coordinator did not answer: figures carried, with their age
            parts = tuple(
                dataclasses.replace(p, as_of=at - rng.randint(1, 30)) for p in g.partitions
            )
            g = dataclasses.replace(g, partitions=parts, error="coordinator 2 did not answer")
        elif roll < 0.27:  # a rebalance
            g = dataclasses.replace(g, state="PreparingRebalance", members=g.members + 1)
        else:  # read again, the same figures: a new, equal object
            g = dataclasses.replace(
                g, partitions=tuple(GroupPartition(**vars(p)) for p in g.partitions)
            )
        if rng.random() > 0.03:  # a group deleted
            fresh.append(g)
    if rng.random() < 0.2:
        fresh.append(group(f"new-{i:03d}", (rng.randint(0, 50), 0, 0, 0)))
    return _same_where_equal(groups, tuple(sorted(fresh, key=lambda g: g.group_id)))


@pytest.mark.parametrize("seed", range(4))
async def test_groups_pane_matches_a_fresh_build(seed: int) -> None:
    rng = random.Random(seed)
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(GroupsTable)
        snap = dataclasses.replace(
            healthy(), groups=tuple(group(f"g-{n:03d}", (n, 0, n % 7, 0)) for n in range(30))
        )
        feed(app, snap)
        for i in range(60):
            at = T0 + i + 1
            # Half the snapshots come from another source: the very same groups tuple.
            groups = snap.groups if rng.random() < 0.5 else poll(rng, snap.groups, i, at)
            snap = dataclasses.replace(snap, taken_at=at, groups=groups, seq=snap.seq + 1)
            feed(app, snap)
            await pilot.pause()
            assert shown(table) == expected(snap), f"step {i}"


async def test_unchanged_groups_are_not_redrawn() -> None:
    """A snapshot with the same groups redraws nothing; a poll that changes one group's lag
    redraws that row only; a carried figure's age keeps counting with the clock."""
    app = new_app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(GroupsTable)
        groups = tuple(group(f"g-{n}", (n, 0, 0, 0)) for n in range(5))
        snap = dataclasses.replace(healthy(), groups=groups)
        feed(app, snap)
        await pilot.pause()
        cells = {key: table.get_row(key) for key in table.row_keys}
        drawn: list[dict[str, list[object]]] = []
        redrawn = table.patch

        def spy(changed, *args, **kwargs):  # type: ignore[no-untyped-def]
            drawn.append(dict(changed))
            return redrawn(changed, *args, **kwargs)

        table.patch = spy  # type: ignore[method-assign]
        feed(app, dataclasses.replace(snap, taken_at=T0 + 1, seq=snap.seq + 1))
        await pilot.pause()
        assert drawn == []
        moved = (groups[0], group("g-1", (777, 0, 0, 0)), *groups[2:])
        feed(app, dataclasses.replace(snap, taken_at=T0 + 2, groups=moved, seq=snap.seq + 2))
        await pilot.pause()
        assert [list(d) for d in drawn] == [["g-1"]]
        assert str(table.get_row("g-1")[2]) == "777"
        assert all(table.get_row(k)[2] is cells[k][2] for k in ("g-0", "g-2", "g-3", "g-4"))
        carried = dataclasses.replace(
            moved[3],
            partitions=tuple(dataclasses.replace(p, as_of=T0) for p in moved[3].partitions),
        )
        aged = (*moved[:3], carried, moved[4])
        feed(app, dataclasses.replace(snap, taken_at=T0 + 3, groups=aged, seq=snap.seq + 3))
        await pilot.pause()
        assert str(table.get_row("g-3")[2]).endswith("(3s old)")
        feed(app, dataclasses.replace(snap, taken_at=T0 + 9, groups=aged, seq=snap.seq + 4))
        await pilot.pause()
        assert str(table.get_row("g-3")[2]).endswith("(9s old)")
        assert [list(d) for d in drawn][-1] == ["g-3"]

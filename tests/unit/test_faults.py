"""Issue 36 part 1: a fault is one declaration (kconsole.faults), and every surface that names
faults reads the list: the drill's --fault choices and spec, the export's idea of which event is
the fault, the command registry, the keys and the chooser, the palette's words, the backends'
commands. A surface that kept its own list would drift from these."""

from __future__ import annotations

from dataclasses import replace

import click
import pytest
from textual.binding import Binding

from kconsole.cli.cluster import cluster
from kconsole.cli.drill import drill_run
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands.registry import REGISTRY
from kconsole.drills.export import latest_fault
from kconsole.drills.spec import TARGETS, DrillError, DrillSpec
from kconsole.faults import (
    FAULT_KINDS,
    PRIMITIVES,
    fault_kind,
    fault_names,
    fault_of,
    keyed,
    keyed_words,
    primitive,
)
from kconsole.timeline import Event, EventKind
from kconsole.ui.screens.actions import BrokerChooser
from kconsole.ui.widgets.tables import BrokersTable


def test_every_primitive_is_declared_once_and_each_fault_heals_with_a_harmless_one() -> None:
    assert sorted(p.action for p in PRIMITIVES) == sorted(BrokerAction)
    assert len(fault_names()) == len(set(fault_names()))
    for kind in FAULT_KINDS:
        assert kind.apply.destructive and not kind.heal.destructive, kind.name
        assert kind.apply in PRIMITIVES and kind.heal in PRIMITIVES
        assert kind.targets and kind.bounded_by and kind.caveat and kind.signal, kind.name
        assert fault_kind(kind.name) is kind and fault_of(kind.apply.action) is kind
    keys = [p.key for p in keyed()]
    assert len(keys) == len(set(keys)) and all(len(k) == 1 for k in keys)
    with pytest.raises(KeyError, match="stop, kill, pause"):
        fault_kind("flaky")


def test_a_repeated_key_heals_only_where_the_fault_says_so() -> None:
    pause, stop = fault_kind("pause"), fault_kind("stop")
    assert pause.action_for(ProcState.PAUSED) is BrokerAction.RESUME
    assert pause.action_for(None) is BrokerAction.PAUSE
    assert stop.action_for(ProcState.STOPPED) is BrokerAction.STOP  # t starts it, not s


def test_the_command_line_reads_the_list() -> None:
    fault = next(p for p in drill_run.params if p.name == "fault")
    assert isinstance(fault.type, click.Choice)
    assert tuple(fault.type.choices) == fault_names()
    for kind in FAULT_KINDS:
        assert f"{kind.name}: {kind.signal}" in (fault.help or "")
    assert isinstance(cluster, click.Group)
    for p in PRIMITIVES:  # `kconsole cluster stop|kill|pause|resume|start NODE`
        command = cluster.commands[p.name]
        assert (command.help or "").startswith(p.cli_help)
    assert TARGETS.split(" | ") == list(dict.fromkeys(t for k in FAULT_KINDS for t in k.targets))


def test_the_registry_and_the_keys_read_the_list() -> None:
    for p in PRIMITIVES:
        spec = REGISTRY[f"broker.{p.name}"]
        assert (spec.summary, spec.destructive, spec.method) == (p.summary, p.destructive, "broker")
    bindings = [b for b in BrokersTable.BINDINGS if isinstance(b, Binding)]
    shown = [b for b in bindings if b.show]
    chooser = [b for b in BrokerChooser.BINDINGS if isinstance(b, Binding)]
    for p in keyed():
        assert any(
            b.key == p.key and b.action == f"broker('{p.name}')" and b.description == p.label
            for b in shown
        ), p.name
        # the hidden fallback that says why the key is disabled
        assert any(b.key == p.key and b.action == f"refused('{p.name}')" for b in bindings)
        assert any(b.key == p.key and b.action == f"choose('{p.name}')" for b in chooser)
    assert keyed_words() == ", ".join(p.name for p in keyed()[:-1]) + f" or {keyed()[-1].name}"


def test_the_drill_spec_and_the_export_read_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind added to the list is a fault to the drill spec and to the timeline's export
    without either of them changing (the keys and commands are built from it at import)."""
    with pytest.raises(DrillError, match="--fault must be one of stop, kill, pause, isolate"):
        DrillSpec(fault="flaky", target="controller")
    extra = replace(fault_kind("kill"), name="flaky")
    monkeypatch.setattr("kconsole.faults.FAULT_KINDS", (*FAULT_KINDS, extra))
    assert DrillSpec(fault="flaky", target="controller").fault == "flaky"
    fault = Event(2.0, EventKind.ACTION, "flaky broker 2", broker=2, new="flaky")
    restore = Event(3.0, EventKind.ACTION, "start broker 2", broker=2, new="start")
    assert latest_fault([fault, restore]) is fault


def test_each_surface_says_the_same_words() -> None:
    assert primitive("pause").how == "SIGSTOP, sockets stay open, asks first"
    assert primitive(BrokerAction.START).words == "restart bring back up"
    assert fault_of("resume") is None and fault_of("start") is None

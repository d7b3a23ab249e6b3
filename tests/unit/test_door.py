"""The one door: every modifying action is a registered command, read-only refuses each one
before anything happens, and every outcome lands in the audit log.

The classification tables below are the contract: a new CLI subcommand or key binding fails
`test_every_cli_command_is_classified` / `test_every_binding_is_classified` until someone
decides whether it changes anything, and if it does, which registered command it goes through.
"""

from __future__ import annotations

import inspect
import json
import multiprocessing
import pkgutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from textual.binding import Binding
from textual.dom import DOMNode

import kconsole.ui
from kconsole.cli import main
from kconsole.cluster.values import BrokerAction
from kconsole.commands import REGISTRY, AuditLog, Commands, NotConfirmed, ReadOnlyError, yes
from kconsole.commands.auditlog import mask
from kconsole.config import ConfigError, Settings, load_settings

# CLI subcommands that change something -> the registered command they go through.
MUTATING_CLI = {
    "cluster up": "cluster.up",
    "cluster down": "cluster.down",
    "cluster stop": "broker.stop",
    "cluster kill": "broker.kill",
    "cluster pause": "broker.pause",
    "cluster resume": "broker.resume",
    "cluster start": "broker.start",
    "cluster isolate": "broker.isolate",
    "cluster partition": "broker.partition",
    "cluster slow": "broker.slow",
    "cluster heal": "broker.heal",
    "drill heal": "broker.heal",
    "produce": "produce",
    "drill run": "drill.run",
    "jobs start": "job.start",
    "jobs stop": "job.stop",
    "reassign execute": "reassign.execute",
    "reassign cancel": "reassign.cancel",
    "elect": "elect.preferred",
}
# Flags that turn a subcommand into another registered command.
MUTATING_CLI_VARIANTS = {
    ("cluster down", "--purge"): "cluster.purge",
    ("elect", "--unclean"): "elect.unclean",
}
# CLI subcommands that only read (or fill the per-user jar cache).
READING_CLI = {
    "describe",
    "audit",
    "cluster status",
    "cluster logs",
    "cluster fetch",
    "jobs list",
    "jobs fetch",
    "jobs status",
    "jobs logs",
    "reassign generate",
    "reassign drain",
    "reassign list",
    # Reports; once a plan is complete it removes the throttles through reassign.unthrottle
    # (read-only: refused, and verify says the throttles stay).
    "reassign verify",
}

# (class, action name) of key bindings that change something -> registered command(s).
MUTATING_BINDINGS = {
    ("BrokersTable", "broker"): "broker.*",
    ("BrokersTable", "refused"): "broker.*",  # the fallback of a disabled key: refused, logged
    ("BrokerChooser", "choose"): "broker.*",
    ("NetworkChooser", "choose"): "broker.*",  # isolate, partition, slow (confirmed next), heal
    ("ProduceScreen", "send"): "produce",
    ("TailScreen", "restart"): "tail.group",  # with a group typed in the bar
    ("JobsScreen", "stop_run"): "job.stop",
    ("StartJobDialog", "start"): "job.start",
    ("PartitionsTable", "elect"): "elect.*",  # E: a scope first; U: unclean, straight to confirm
    ("ElectScope", "choose"): "elect.preferred",
    ("ReassignScreen", "execute"): "reassign.execute",
    ("ReassignScreen", "cancel_reassignment"): "reassign.cancel",
    # Reports; once the plan is complete it removes the throttles through reassign.unthrottle.
    ("ReassignScreen", "verify"): "reassign.unthrottle",
}


# Bindings that change nothing: move the cursor, open or close a screen, filter, sort, export a
# timeline file, or open a chooser whose choices are commands above (C, L, P, J's "new run").
# Quitting stops the job runs started attached from this console, through job.stop.
READING_BINDINGS = {
    # The Line-API table's own movement keys (partitions, events).
    *(
        ("VirtualTable", a)
        for a in (
            "cursor_up",
            "cursor_down",
            "page_up",
            "page_down",
            "scroll_top",
            "scroll_bottom",
            "scroll_left",
            "scroll_right",
        )
    ),
    ("AskText", "cancel"),
    ("ElectScope", "cancel"),
    ("BrokersTable", "drain"),  # opens the reassignment screen on a drain proposal
    ("PartitionsTable", "reassign"),  # opens the reassignment screen
    ("ReassignScreen", "back"),
    ("ReassignScreen", "edit"),  # the plan on screen, not the cluster
    ("ReassignScreen", "export"),  # writes plan files
    ("ReassignScreen", "generate"),
    ("ReassignScreen", "import_plan"),
    ("BrokerChooser", "cancel"),
    ("BrokersTable", "network"),  # opens the network faults' chooser
    ("NetworkChooser", "cancel"),
    ("NetworkChooser", "one_way"),  # a choice in the chooser, not the cluster
    ("NetworkChooser", "rate"),  # the slow fault's rate, a choice in the chooser
    ("ConfirmBrokerAction", "cancel"),
    ("FilterInput", "clear"),
    ("GroupScreen", "close"),
    ("TopicsScreen", "close"),
    ("GroupsTable", "select_cursor"),
    ("HelpScreen", "close"),
    ("JobsScreen", "back"),
    ("JobsScreen", "new_run"),
    ("KConsoleApp", "help"),
    ("KConsoleApp", "quit"),
    ("KConsoleApp", "refresh"),
    ("MainScreen", "app.broker_actions_unavailable"),
    ("MainScreen", "app.focus_next"),
    ("MainScreen", "app.focus_previous"),
    ("MainScreen", "clear_filter"),
    ("MainScreen", "controller_actions"),
    ("MainScreen", "cycle_sort"),
    ("MainScreen", "filter"),
    ("MainScreen", "focus_pane"),
    ("MainScreen", "jobs"),
    ("MainScreen", "produce"),
    ("MainScreen", "reverse_sort"),
    ("MainScreen", "tail"),
    ("MainScreen", "timeline"),
    ("MainScreen", "topics"),
    ("MainScreen", "toggle_internal"),
    ("MainScreen", "toggle_unhealthy"),
    ("PartitionsTable", "app.broker_actions_unavailable"),
    ("PartitionsTable", "leader_actions"),
    ("ProduceScreen", "back"),
    ("ProduceScreen", "tail"),
    ("StartJobDialog", "cancel"),
    ("TailScreen", "back"),
    ("TailScreen", "clear"),
    ("TailScreen", "toggle_pause"),
    ("TimelineScreen", "close"),
    ("TimelineScreen", "export"),
}


def cli_leaves(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, cmd in group.commands.items():
        path = f"{prefix} {name}".strip()
        if isinstance(cmd, click.Group):
            out.update(cli_leaves(cmd, path))
        else:
            out[path] = cmd
    return out


def ui_bindings() -> set[tuple[str, str]]:
    """(class name, action name) of every binding declared by a kconsole.ui class."""
    found: set[tuple[str, str]] = set()
    for info in pkgutil.walk_packages(kconsole.ui.__path__, "kconsole.ui."):
        module = __import__(info.name, fromlist=["_"])
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, DOMNode) or not cls.__module__.startswith("kconsole."):
                continue
            for b in cls.__dict__.get("BINDINGS", []):
                action = b.action if isinstance(b, Binding) else b[1]
                name = action.split("(")[0]
                found.add((cls.__name__, name))
    return found


class TestRegistry:
    """The registry names each command once, and the command layer can run each."""

    def test_each_command_has_its_method(self) -> None:
        for spec in REGISTRY.values():
            assert callable(getattr(Commands, spec.method, None)), spec

    def test_destructive_ones(self) -> None:
        destructive = {n for n, s in REGISTRY.items() if s.destructive}
        assert destructive == {
            "broker.stop",
            "broker.kill",
            "broker.pause",
            "broker.isolate",
            "broker.partition",
            "broker.slow",
            "cluster.purge",
            "drill.run",
            "reassign.execute",
            "reassign.cancel",
            "elect.preferred",
            "elect.unclean",
        }

    def test_cli_tables_name_registered_commands(self) -> None:
        named = set(MUTATING_CLI.values()) | set(MUTATING_CLI_VARIANTS.values())
        assert named <= set(REGISTRY)
        # Every registered command is reachable from the CLI: the console-only tail aside, and
        # reassign.unthrottle, which `reassign verify` runs once a plan is complete.
        assert set(REGISTRY) - named == {"tail.group", "reassign.unthrottle"}


class TestClassification:
    """Every CLI subcommand and every key binding is classified: reading, or a command."""

    def test_every_cli_command_is_classified(self) -> None:
        leaves = set(cli_leaves(main))
        assert leaves == set(MUTATING_CLI) | READING_CLI, (
            f"unclassified: {sorted(leaves - set(MUTATING_CLI) - READING_CLI)}; "
            f"gone: {sorted(set(MUTATING_CLI) | READING_CLI - leaves)}"
        )

    def test_every_binding_is_classified(self) -> None:
        bindings = ui_bindings()
        classified = set(MUTATING_BINDINGS) | READING_BINDINGS
        assert bindings == classified, (
            f"unclassified: {sorted(bindings - classified)}; gone: {sorted(classified - bindings)}"
        )
        assert not set(MUTATING_BINDINGS) & READING_BINDINGS


def read_only_cli(tmp_path: Path, *args: str) -> tuple[int, str, list[dict]]:
    env = {"KCONSOLE_STATE_DIR": str(tmp_path / "state"), "KCONSOLE_CONFIG": ""}
    res = CliRunner().invoke(
        main, ["--read-only", "--bootstrap", "127.0.0.1:9", "--zookeeper", "", *args], env=env
    )
    log = AuditLog(tmp_path / "state" / "audit.jsonl")
    return res.exit_code, res.output, list(log.entries())


CLI_ARGS = {
    "cluster up": ["cluster", "--state-dir", "{dir}", "up"],
    "cluster down": ["cluster", "--state-dir", "{dir}", "down"],
    "cluster stop": ["cluster", "--state-dir", "{dir}", "stop", "2", "--yes"],
    "cluster kill": ["cluster", "--state-dir", "{dir}", "kill", "2", "--yes"],
    "cluster pause": ["cluster", "--state-dir", "{dir}", "pause", "2", "--yes"],
    "cluster resume": ["cluster", "--state-dir", "{dir}", "resume", "2"],
    "cluster start": ["cluster", "--state-dir", "{dir}", "start", "2"],
    "cluster isolate": ["cluster", "--state-dir", "{dir}", "isolate", "2", "--yes"],
    "cluster partition": [
        "cluster",
        "--state-dir",
        "{dir}",
        "partition",
        "2",
        "--from",
        "zookeeper",
        "--yes",
    ],
    "cluster heal": ["cluster", "--state-dir", "{dir}", "heal", "2"],
    "drill heal": ["drill", "heal", "2"],
    "cluster slow": ["cluster", "--state-dir", "{dir}", "slow", "2", "--rate", "65536", "--yes"],
    "produce": ["produce", "-t", "test-topic", "-v", "x"],
    "drill run": [
        "drill",
        "run",
        "--fault",
        "stop",
        "--target",
        "broker:1",
        "--yes",
        "--report",
        "{dir}/r.json",
    ],
    "jobs start": ["jobs", "--state-dir", "{dir}/jobs", "start", "keyed_counts"],
    "jobs stop": ["jobs", "--state-dir", "{dir}/jobs", "stop", "some-run"],
    "reassign execute": ["reassign", "execute", "--plan", "{dir}/plan.json", "--yes"],
    "reassign cancel": ["reassign", "cancel", "--all", "--yes"],
    "elect": ["elect", "--preferred", "--all", "--yes"],
}


class TestReadOnlyCli:
    """Read-only: each mutating subcommand exits 4, says why, logs the refusal, writes nothing."""

    def test_every_mutating_subcommand_has_args(self) -> None:
        assert set(CLI_ARGS) == set(MUTATING_CLI)

    @pytest.mark.parametrize("path", sorted(MUTATING_CLI))
    def test_refused_and_logged(self, path: str, tmp_path: Path) -> None:
        target = tmp_path / "cluster"
        args = [a.replace("{dir}", str(target)) for a in CLI_ARGS[path]]
        code, out, entries = read_only_cli(tmp_path, *args)
        assert code == 4, out
        assert "read-only mode (--read-only): refusing to" in out
        assert [(e["command"], e["outcome"]) for e in entries] == [(MUTATING_CLI[path], "refused")]
        assert entries[0]["error"].startswith("read-only mode")
        assert not target.exists() or not any(target.iterdir())  # nothing written

    def test_unclean_election_is_its_own_command(self, tmp_path: Path) -> None:
        code, _, entries = read_only_cli(tmp_path, "elect", "--unclean", "--all", "--yes")
        assert code == 4
        assert [(e["command"], e["outcome"]) for e in entries] == [("elect.unclean", "refused")]

    def test_purge_is_its_own_command(self, tmp_path: Path) -> None:
        target = tmp_path / "cluster"
        code, _, entries = read_only_cli(
            tmp_path, "cluster", "--state-dir", str(target), "down", "--purge", "--yes"
        )
        assert code == 4
        assert [(e["command"], e["outcome"]) for e in entries] == [("cluster.purge", "refused")]


class TestConfirmation:
    """Destructive commands run only with the typed answer; each refusal is logged."""

    def test_purge_needs_the_name_typed(self, tmp_path: Path) -> None:
        class Local:
            state_dir = tmp_path / "prod-like"
            downs: list[bool] = []

            def down(self, purge: bool = False) -> list[str]:
                self.downs.append(purge)
                return []

        log = AuditLog(tmp_path / "a.jsonl")
        local = Local()
        door = Commands(None, audit=log, local_cluster=lambda _spec: local)  # type: ignore[arg-type,return-value]
        with pytest.raises(NotConfirmed):
            door.cluster_down(purge=True, confirm=lambda _p, answer: False)
        with pytest.raises(NotConfirmed):
            door.cluster_down(purge=True, confirm=None)
        assert local.downs == []
        door.cluster_down(purge=True, confirm=lambda _p, e: e == "prod-like")
        door.cluster_down(purge=False)
        assert local.downs == [True, False]
        outcomes = [(e["command"], e["outcome"]) for e in log.entries()]
        assert outcomes == [
            ("cluster.purge", "refused"),
            ("cluster.purge", "refused"),
            ("cluster.purge", "done"),
            ("cluster.down", "done"),
        ]

    def test_failed_is_logged_with_the_error(self, tmp_path: Path) -> None:
        class Broken:
            def act(
                self,
                action: BrokerAction,
                broker_id: int,
                progress: object = None,
                links: object = None,
            ) -> str:
                raise RuntimeError("socket on fire")

        log = AuditLog(tmp_path / "a.jsonl")
        door = Commands(Broken(), audit=log, bootstrap="b:1", cluster_id=lambda: "abc")  # type: ignore[arg-type]
        with pytest.raises(RuntimeError):
            door.broker(BrokerAction.START, 2, None)
        (entry,) = log.entries()
        assert entry["outcome"] == "failed" and "socket on fire" in entry["error"]
        assert entry["cluster_id"] == "abc" and entry["bootstrap"] == "b:1"
        assert entry["target"] == "broker 2" and entry["user"]

    def test_read_only_refuses_before_asking(self, tmp_path: Path) -> None:
        asked: list[str] = []

        def confirm(prompt: str, expected: str) -> bool:
            asked.append(prompt)
            return True

        door = Commands(None, read_only=True, read_only_reason="KCONSOLE_READ_ONLY")
        door.audit = AuditLog(tmp_path / "a.jsonl")
        with pytest.raises(ReadOnlyError, match=r"KCONSOLE_READ_ONLY\): refusing to kill broker 1"):
            door.broker(BrokerAction.KILL, 1, confirm)
        assert asked == []


class TestAuditLog:
    """Append-only JSON lines, secrets masked, whole lines under concurrency."""

    def test_secrets_are_masked(self) -> None:
        args = {
            "options": {"sasl.password": "hunter2", "topic": "t", "ssl.key.location": "/k"},
            "conf": ["sasl.jaas.config=x y", "spark.ui.port=1"],
            "token": "abc",
            "keys": 3,
        }
        masked = mask(args)
        assert "hunter2" not in json.dumps(masked) and "abc" not in json.dumps(masked)
        assert masked["options"]["topic"] == "t" and masked["keys"] == 3
        assert masked["options"]["ssl.key.location"] == "***"
        assert masked["conf"] == ["sasl.jaas.config=***", "spark.ui.port=1"]

    def test_lines_from_many_processes_stay_whole(self, tmp_path: Path) -> None:
        path = tmp_path / "audit.jsonl"
        procs = [multiprocessing.Process(target=_write_many, args=(path, i)) for i in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        entries = list(AuditLog(path).entries())
        assert len(entries) == 4 * 200
        assert all(e["command"] == "produce" and len(e["args"]["pad"]) == 3000 for e in entries)

    def test_cli_prints_it(self, tmp_path: Path) -> None:
        env = {"KCONSOLE_STATE_DIR": str(tmp_path)}
        AuditLog(tmp_path / "audit.jsonl").append(
            command="broker.stop", target="broker 2", args={}, outcome="refused", error="nope"
        )
        res = CliRunner().invoke(main, ["audit"], env=env)
        assert res.exit_code == 0 and "broker.stop" in res.output and "refused" in res.output
        res = CliRunner().invoke(main, ["audit", "--json"], env=env)
        assert json.loads(res.output.splitlines()[0])["error"] == "nope"


def _write_many(path: Path, n: int) -> None:
    log = AuditLog(path)
    for i in range(200):
        log.append(
            command="produce", target=f"t{n}", args={"i": i, "pad": "x" * 3000}, outcome="done"
        )


class TestReadOnlyConfig:
    """Read-only per cluster in the config file, with the reason in every refusal."""

    def write(self, tmp_path: Path, text: str) -> Path:
        path = tmp_path / "config.toml"
        path.write_text(text)
        return path

    def test_named_cluster(self, tmp_path: Path) -> None:
        cfg = self.write(
            tmp_path,
            '[clusters.prod]\nbootstrap = "prod1:9093,prod2:9093"\nread_only = true\n'
            '[clusters.dev]\nbootstrap = "dev:9092"\n',
        )
        prod = load_settings(config_path=cfg, cluster="prod", env={})
        assert prod.read_only and prod.bootstrap == "prod1:9093,prod2:9093"
        assert "cluster 'prod' is read_only" in prod.read_only_reason
        dev = load_settings(config_path=cfg, cluster="dev", env={})
        assert not dev.read_only and dev.bootstrap == "dev:9092"

    def test_same_servers_by_another_way_stay_read_only(self, tmp_path: Path) -> None:
        cfg = self.write(tmp_path, '[clusters.prod]\nbootstrap = "prod1:9093"\nread_only = true\n')
        s = load_settings(config_path=cfg, bootstrap="PROD1:9093,other:1", env={})
        assert s.read_only and "same servers" in s.read_only_reason

    def test_unknown_cluster_and_bad_keys(self, tmp_path: Path) -> None:
        cfg = self.write(tmp_path, '[clusters.prod]\nbootstrap = "p:1"\n')
        with pytest.raises(ConfigError, match=r"no cluster named 'nope'.*known: prod"):
            load_settings(config_path=cfg, cluster="nope", env={})
        bad = self.write(tmp_path, '[clusters.prod]\nread_only = "yes"\n')
        with pytest.raises(
            ConfigError,
            match=r"clusters\.prod\.read_only \(from .*\): must be true or false, not the string",
        ):
            load_settings(config_path=bad, env={})

    def test_reasons(self) -> None:
        assert load_settings(read_only=True, env={}).read_only_reason == "--read-only"
        env = {"KCONSOLE_READ_ONLY": "1"}
        assert load_settings(env=env).read_only_reason == "KCONSOLE_READ_ONLY"
        assert not load_settings(env={}).read_only

    def test_commands_take_the_decision(self) -> None:
        s = Settings(read_only=True, read_only_reason="--read-only")
        door = Commands.for_settings(s, cluster_id=lambda: None)
        assert door.read_only and door.refusal("produce") == "read-only mode (--read-only)"
        assert Commands.for_settings(Settings(), cluster_id=lambda: None).refusal("produce") == ""
        assert yes("?", "1")


def test_the_audit_line_says_who_the_cluster_knows_kconsole_as(tmp_path: Path) -> None:
    """Beside the OS user, the principal: the SASL user and mechanism of the settings (never
    the password), read once per command layer."""
    settings = Settings(
        bootstrap="127.0.0.1:9",
        zookeeper="",
        read_only=True,
        read_only_reason="--read-only",
        client={
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "canary-7d1f",
        },
    )
    log = AuditLog(tmp_path / "a.jsonl")
    door = Commands.for_settings(settings, audit=log, cluster_id=lambda: "cid")
    with pytest.raises(ReadOnlyError):
        door.refuse("produce", "test-topic")
    (entry,) = list(log.entries())
    assert entry["principal"] == "User:alice (SCRAM-SHA-512)"
    assert entry["user"] and entry["outcome"] == "refused"
    assert "canary-7d1f" not in (tmp_path / "a.jsonl").read_text()
    (tmp_path / "a.jsonl").rename(tmp_path / "audit.jsonl")
    shown = CliRunner().invoke(main, ["audit"], env={"KCONSOLE_STATE_DIR": str(tmp_path)})
    assert shown.exit_code == 0, shown.output
    assert "User:alice" in shown.output.splitlines()[1], shown.output

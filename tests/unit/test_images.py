"""kconsole.cluster.docker.images: which base the Kafka image goes on, what is kept, what a failure
says.

The engine is a fake with the SDK's surface that the builder uses (images.get / pull,
api.build / import_image_from_file); the real build runs in tests/integration/test_docker_engine.py
(the `docker_images` fixture) on a real engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from kconsole.cluster.docker import images
from kconsole.cluster.errors import ClusterError


class FakeImages:
    def __init__(self, engine: FakeEngine):
        self.engine = engine

    def get(self, name: str) -> object:
        if name not in self.engine.present:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return object()

    def pull(self, name: str) -> object:
        self.engine.calls.append(("pull", name))
        if not self.engine.registry:
            raise docker.errors.APIError(
                "pull failed", explanation='Get "https://registry/v2/": no such host'
            )
        self.engine.present.add(name)
        return object()


class FakeApi:
    def __init__(self, engine: FakeEngine):
        self.engine = engine

    def build(self, *, path: str, tag: str, buildargs: dict[str, str], **_: Any) -> Iterator[dict]:
        self.engine.calls.append(("build", tag, dict(buildargs)))
        self.engine.contexts[tag] = sorted(p.name for p in Path(path).rglob("*"))
        if tag in self.engine.failing:
            yield {"stream": "Step 3/7 : RUN apt-get update"}
            yield {"error": "The command '/bin/sh -c apt-get update' returned a non-zero code: 100"}
            return
        yield {"stream": f"Successfully tagged {tag}\n"}
        self.engine.present.add(tag)

    def import_image_from_file(self, filename: str, repository: str, tag: str) -> None:
        self.engine.calls.append(("import", f"{repository}:{tag}"))
        self.engine.present.add(f"{repository}:{tag}")


class FakeEngine:
    def __init__(self, present: set[str] = frozenset(), registry: bool = False):  # type: ignore[assignment]
        self.present = set(present)
        self.registry = registry
        self.calls: list[tuple[Any, ...]] = []
        self.contexts: dict[str, list[str]] = {}
        self.failing: set[str] = set()
        self.images = FakeImages(self)
        self.api = FakeApi(self)


@pytest.fixture
def jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("kafka_2.13-3.9.2.jar", "zookeeper-3.8.4.jar"):
        (lib / name).write_bytes(b"PK")
    monkeypatch.setattr(images.jars, "ensure_kafka_jars", lambda version: lib)
    return lib


def builds(engine: FakeEngine) -> list[tuple[str, dict[str, str]]]:
    return [(c[1], c[2]) for c in engine.calls if c[0] == "build"]


def test_an_image_that_exists_is_kept(jars: Path) -> None:
    engine = FakeEngine({"kconsole-kafka:3.9.2"})
    lines = images.build_images(engine, ["3.9.2"])
    assert lines == ["kconsole-kafka:3.9.2: present, kept (--rebuild builds it again)"]
    assert engine.calls == []


def test_the_kafka_image_carries_the_resolved_jars_on_the_local_jre(jars: Path) -> None:
    engine = FakeEngine({images.JRE_IMAGE})
    [line] = images.build_images(engine, ["3.9.2"])
    assert line.startswith("kconsole-kafka:3.9.2: built on kconsole-jre:17 in ")
    assert builds(engine) == [
        ("kconsole-kafka:3.9.2", {"BASE_IMAGE": "kconsole-jre:17", "KAFKA_VERSION": "3.9.2"})
    ]
    context = engine.contexts["kconsole-kafka:3.9.2"]
    for name in ("Dockerfile", "kafka-entrypoint", "kafka-healthcheck", "kafka_2.13-3.9.2.jar"):
        assert name in context
    assert not any(c[0] == "pull" for c in engine.calls), "a local JRE needs no registry"


def test_a_given_base_image_is_used_as_it_is(jars: Path) -> None:
    engine = FakeEngine()
    images.build_images(engine, ["3.9.2"], base_image="eclipse-temurin:17-jre")
    assert builds(engine)[0][1]["BASE_IMAGE"] == "eclipse-temurin:17-jre"
    assert [c for c in engine.calls if c[0] != "build"] == []


def test_the_public_jre_when_a_registry_answers(jars: Path) -> None:
    engine = FakeEngine(registry=True)
    images.build_images(engine, ["3.9.2"])
    assert ("pull", images.PUBLIC_JRE_IMAGE) in engine.calls
    assert builds(engine)[0][1]["BASE_IMAGE"] == images.PUBLIC_JRE_IMAGE


def test_no_registry_builds_the_jre_from_debian_packages(
    jars: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The machine's own path: the pull fails, so Debian is made with debootstrap, the JRE
    goes on it, and both Kafka versions go on the JRE (one base for all)."""
    engine = FakeEngine()
    made: list[list[str]] = []

    def debootstrap(argv: list[str], **_: Any) -> Any:
        made.append(argv)
        Path(argv[3]).mkdir(parents=True)

        class Done:
            returncode, stdout, stderr = 0, "", ""

        return Done()

    monkeypatch.setattr(images.shutil, "which", lambda cmd: f"/usr/sbin/{cmd}")
    monkeypatch.setattr(images.os, "geteuid", lambda: 0)
    monkeypatch.setattr(images, "debian_mirror", lambda: "http://mirror.invalid/debian")
    real_run = images.subprocess.run
    monkeypatch.setattr(
        images.subprocess,
        "run",
        lambda argv, **kw: (
            debootstrap(argv, **kw) if "debootstrap" in argv[0] else real_run(argv, **kw)
        ),
    )
    progress: list[str] = []
    lines = images.build_images(engine, ["3.9.2", "4.4.0"], progress=progress.append)
    assert made and made[0][1:3] == ["--variant=minbase", "bookworm"]
    assert made[0][-1] == "http://mirror.invalid/debian"
    assert ("import", images.DEBIAN_IMAGE) in engine.calls
    assert builds(engine) == [
        (images.JRE_IMAGE, {"DEBIAN_IMAGE": images.DEBIAN_IMAGE}),
        ("kconsole-kafka:3.9.2", {"BASE_IMAGE": images.JRE_IMAGE, "KAFKA_VERSION": "3.9.2"}),
        ("kconsole-kafka:4.4.0", {"BASE_IMAGE": images.JRE_IMAGE, "KAFKA_VERSION": "4.4.0"}),
    ]
    assert any(
        "cannot pull eclipse-temurin:17-jre (" in p and "no such host" in p for p in progress
    )
    assert len(lines) == 2


def test_without_root_or_debootstrap_the_error_says_what_to_do(
    jars: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(images.shutil, "which", lambda cmd: None)
    with pytest.raises(ClusterError) as err:
        images.build_images(FakeEngine(), ["3.9.2"])
    assert "debootstrap is not installed" in err.value.message
    assert "--base-image" in err.value.message


def test_a_failed_build_names_the_step(jars: Path) -> None:
    engine = FakeEngine({images.JRE_IMAGE})
    engine.failing.add("kconsole-kafka:3.9.2")
    with pytest.raises(ClusterError) as err:
        images.build_images(engine, ["3.9.2"])
    assert "docker build of kconsole-kafka:3.9.2 failed" in err.value.message
    assert "apt-get update" in err.value.message


def test_the_debian_mirror_is_the_hosts_own(tmp_path: Path) -> None:
    """deb822 and one-line sources; the security archive and other suites are not it."""
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\n# a comment: with a colon\nURIs: http://archive.invalid/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
        "Types: deb\nURIs: http://archive.invalid/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    (d / "other.list").write_text("deb [arch=amd64] https://elsewhere.invalid/apt stable main\n")
    assert images.debian_mirror([tmp_path / "none", d]) == "http://archive.invalid/debian"
    one_line = tmp_path / "sources.list"
    one_line.write_text(
        "# deb http://old.invalid/debian bookworm main\ndeb http://x.invalid/d bookworm main\n"
    )
    assert images.debian_mirror([one_line]) == "http://x.invalid/d"
    with pytest.raises(ClusterError, match="no Debian bookworm mirror"):
        images.debian_mirror([d / "other.list"])

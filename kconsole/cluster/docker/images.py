"""The images of the compose clusters: Apache Kafka from the jars kconsole already resolves.

    kconsole-kafka:<version>   compose/kafka-image/Dockerfile on a Java 17 base image, with the
                               jars of that Kafka version from the per-user cache
                               (ensure_kafka_jars: the same ones the local cluster runs,
                               ZooKeeper included on 3.x)
    kconsole-jre:17            compose/jre/Dockerfile: openjdk-17-jre-headless from Debian's
                               packages, on
    kconsole-debian:bookworm   a minimal Debian made here: `debootstrap --variant=minbase
                               bookworm` with this machine's own Debian mirror, then imported

The base of the Kafka image is, in order: the one asked for (`base_image`, e.g. a public JRE
image), kconsole-jre:17 when it exists, the public JRE image when it is present or can be
pulled, else kconsole-jre:17 built from Debian packages, which needs no image registry (but
root, debootstrap and a reachable Debian mirror). An image that exists is kept unless `rebuild`.
Every engine failure is a ClusterError carrying the engine's own words.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker

from kconsole.cluster import jars
from kconsole.cluster.docker.control import ENGINE_ERRORS, engine_message
from kconsole.cluster.errors import ClusterError
from kconsole.paths import bundled

KAFKA_REPOSITORY = "kconsole-kafka"
JRE_IMAGE = "kconsole-jre:17"
DEBIAN_IMAGE = "kconsole-debian:bookworm"
DEBIAN_SUITE = "bookworm"
# The public base for users whose engine reaches a registry: Java 17, bash, coreutils.
PUBLIC_JRE_IMAGE = "eclipse-temurin:17-jre"
VERSION_LABEL = "dev.kconsole.kafka-version"

COMPOSE_DIR = bundled("compose")
BUILD_TIMEOUT_S = 900.0
_APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))

Progress = Callable[[str], None]


def kafka_image(version: str) -> str:
    """The compose files' image for one Kafka version."""
    return f"{KAFKA_REPOSITORY}:{version}"


def has_image(client: Any, name: str) -> bool:
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    except ENGINE_ERRORS as exc:
        why = engine_message(exc)
        raise ClusterError(f"cannot ask the Docker engine for image {name}: {why}") from exc
    return True


def build_images(
    client: Any,
    versions: Iterable[str],
    *,
    base_image: str | None = None,
    rebuild: bool = False,
    compose_dir: Path = COMPOSE_DIR,
    progress: Progress = lambda _msg: None,
    nice: int = 0,
) -> list[str]:
    """Make sure kconsole-kafka:<version> exists for each version; one line per image saying
    what was done (kept or built, on which base, in how many seconds). `nice`: the CPU priority
    of the processes run here (debootstrap), for a build that should yield to other work."""
    done: list[str] = []
    base: str | None = base_image
    for version in versions:
        tag = kafka_image(version)
        if not rebuild and has_image(client, tag):
            done.append(f"{tag}: present, kept (--rebuild builds it again)")
            continue
        if base is None:
            base = ensure_base_image(client, compose_dir=compose_dir, progress=progress, nice=nice)
        progress(f"resolving the jars of Kafka {version} (Maven, cached after the first time)")
        lib = jars.ensure_kafka_jars(version)
        t0 = time.monotonic()
        with _kafka_context(compose_dir, lib) as context:
            _build(
                client,
                context,
                tag,
                {"BASE_IMAGE": base, "KAFKA_VERSION": version},
                progress,
            )
        done.append(f"{tag}: built on {base} in {time.monotonic() - t0:.1f} s")
    return done


def ensure_base_image(
    client: Any,
    *,
    compose_dir: Path = COMPOSE_DIR,
    progress: Progress = lambda _msg: None,
    nice: int = 0,
) -> str:
    """A Java 17 image to build Kafka on (see the module's docstring for the order)."""
    if has_image(client, JRE_IMAGE):
        return JRE_IMAGE
    if has_image(client, PUBLIC_JRE_IMAGE):
        return PUBLIC_JRE_IMAGE
    progress(f"pulling {PUBLIC_JRE_IMAGE}")
    try:
        client.images.pull(PUBLIC_JRE_IMAGE)
        return PUBLIC_JRE_IMAGE
    except ENGINE_ERRORS as exc:
        progress(
            f"cannot pull {PUBLIC_JRE_IMAGE} ({engine_message(exc)}); building {JRE_IMAGE} from "
            "Debian packages instead"
        )
    debian = ensure_debian_image(client, progress=progress, nice=nice)
    t0 = time.monotonic()
    _build(client, compose_dir / "jre", JRE_IMAGE, {"DEBIAN_IMAGE": debian}, progress)
    progress(f"{JRE_IMAGE}: built on {debian} in {time.monotonic() - t0:.1f} s")
    return JRE_IMAGE


def ensure_debian_image(
    client: Any, *, progress: Progress = lambda _msg: None, nice: int = 0
) -> str:
    """kconsole-debian:bookworm, made with debootstrap when missing."""
    if has_image(client, DEBIAN_IMAGE):
        return DEBIAN_IMAGE
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        why = "debootstrap is not installed" if debootstrap is None else "this is not root"
        raise ClusterError(
            f"no Java base image: {PUBLIC_JRE_IMAGE} cannot be pulled and {DEBIAN_IMAGE} "
            f"cannot be made here ({why}). Pass a Java 17 image you have (--base-image), or "
            "as root install debootstrap (apt-get install debootstrap) and run this again"
        )
    mirror = debian_mirror()
    t0 = time.monotonic()
    progress(f"making {DEBIAN_IMAGE} with debootstrap --variant=minbase {DEBIAN_SUITE}")
    with tempfile.TemporaryDirectory(prefix="kconsole-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = [debootstrap, "--variant=minbase", DEBIAN_SUITE, str(rootfs), mirror]
        run = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            preexec_fn=(lambda: os.nice(nice)) if nice else None,
        )
        if run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-5:])
            raise ClusterError(f"debootstrap failed (exit {run.returncode}):\n{tail}")
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, _, tag = DEBIAN_IMAGE.partition(":")
        try:
            client.api.import_image_from_file(str(tarball), repository=repository, tag=tag)
        except ENGINE_ERRORS as exc:
            why = engine_message(exc)
            raise ClusterError(f"docker import of {DEBIAN_IMAGE} failed: {why}") from exc
    progress(f"{DEBIAN_IMAGE}: made in {time.monotonic() - t0:.1f} s")
    return DEBIAN_IMAGE


def debian_mirror(sources: Iterable[Path] = _APT_SOURCES) -> str:
    """The Debian archive this machine's apt uses (the first `deb` source whose suites include
    the bookworm release itself), so the image comes from where the host's packages do."""
    for uri, suites in _apt_entries(sources):
        if DEBIAN_SUITE in suites and "security" not in uri:
            return uri
    raise ClusterError(
        f"no Debian {DEBIAN_SUITE} mirror in this machine's apt sources "
        "(/etc/apt/sources.list, /etc/apt/sources.list.d): cannot make the Debian base image"
    )


def _apt_entries(sources: Iterable[Path]) -> Iterator[tuple[str, list[str]]]:
    """(URI, suites) of every enabled `deb` source: one-line and deb822 formats."""
    files: list[Path] = []
    for src in sources:
        if src.is_dir():
            files += sorted(p for p in src.iterdir() if p.suffix in (".list", ".sources"))
        elif src.is_file():
            files.append(src)
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    key, _, value = line.partition(":")
                    fields[key.strip().lower()] = value.strip()
                if "deb" not in fields.get("types", "").split():
                    continue
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                for uri in fields.get("uris", "").split():
                    yield uri, fields.get("suites", "").split()
        else:
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", "", line).split()
                if len(words) >= 3 and words[0] == "deb":
                    yield words[1], [words[2]]


@contextmanager
def _kafka_context(compose_dir: Path, lib: Path) -> Iterator[Path]:
    """A build context: compose/kafka-image's files plus libs/ with the resolved jars (hard links
    where the file system allows, else copies)."""
    source = compose_dir / "kafka-image"
    if not (source / "Dockerfile").exists():
        raise ClusterError(f"no {source / 'Dockerfile'}: run this from a kconsole checkout")
    with tempfile.TemporaryDirectory(prefix="kconsole-image-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(source, context)
        libs = context / "libs"
        libs.mkdir()
        for jar in sorted(lib.glob("*.jar")):
            try:
                os.link(jar, libs / jar.name)
            except OSError:
                shutil.copy2(jar, libs / jar.name)
        yield context


def _build(client: Any, context: Path, tag: str, args: dict[str, str], progress: Progress) -> None:
    progress(f"building {tag} ({', '.join(f'{k}={v}' for k, v in args.items())})")
    try:
        # The low-level call streams the build's output, so a failing step can be named.
        stream = client.api.build(
            path=str(context), tag=tag, buildargs=args, rm=True, forcerm=True, decode=True
        )
        last: list[str] = []
        for chunk in stream:
            if "error" in chunk:
                detail = "\n".join(last[-8:])
                raise ClusterError(f"docker build of {tag} failed: {chunk['error']}\n{detail}")
            line = str(chunk.get("stream", "")).rstrip()
            if line:
                last.append(line)
    except ENGINE_ERRORS as exc:
        raise ClusterError(f"docker build of {tag} failed: {engine_message(exc)}") from exc
    if not has_image(client, tag):
        raise ClusterError(f"docker build of {tag} ended, but the engine has no such image")

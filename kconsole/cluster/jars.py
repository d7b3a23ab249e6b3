"""Kafka + ZooKeeper jars for the embedded cluster, resolved by Maven into a per-user cache.

The first run needs `mvn` and Maven Central; after that the cache is reused and works offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from kconsole import paths
from kconsole.cluster.errors import ClusterError, ToolMissing
from kconsole.cluster.settings import KAFKA_VERSION

_MARKER = ".complete"


def kafka_lib_dir(version: str = KAFKA_VERSION) -> Path:
    """Where the jars of one Kafka version live once resolved."""
    return paths.cache_dir() / f"kafka-{version}" / "lib"


def kafka_jars_ready(version: str = KAFKA_VERSION) -> bool:
    """True when the jars of this version are already in the cache."""
    return (kafka_lib_dir(version) / _MARKER).exists()


def ensure_kafka_jars(version: str = KAFKA_VERSION, *, quiet: bool = True) -> Path:
    """Return the lib dir for `version`, resolving it with Maven first if it is not cached."""
    lib = kafka_lib_dir(version)
    if (lib / _MARKER).exists():
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing(
            "Maven (mvn) is needed once to fetch the Kafka jars into "
            f"{lib.parent}; install it (Debian/Ubuntu: apt-get install maven) and retry."
        )
    pom = resources.files("kconsole.cluster") / "maven" / "kafka.pom.xml"
    lib.parent.mkdir(parents=True, exist_ok=True)
    # Resolve into a sibling temp dir and rename, so an interrupted fetch never looks complete.
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        out = Path(tmp) / "lib"
        with resources.as_file(pom) as pom_path:
            cmd = [
                mvn,
                "-B",
                "-f",
                str(pom_path),
                f"-Dkafka.version={version}",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={out}",
            ]
            if quiet:
                cmd.insert(2, "-q")
            proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not any(out.glob("kafka_2.13-*.jar")):
            lines = (proc.stdout + proc.stderr).strip().splitlines()
            raise ClusterError(
                f"Maven could not resolve Kafka {version} (exit {proc.returncode}): "
                "check network access to Maven Central, or a proxy in ~/.m2/settings.xml.",
                log_lines=lines[-25:],
            )
        (out / _MARKER).write_text(version + "\n")
        if lib.exists():
            shutil.rmtree(lib)
        out.rename(lib)
    return lib


def java_executable() -> str:
    """The java binary: $JAVA_HOME/bin/java if set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ToolMissing(
            "Java is needed to run the local Kafka cluster (Java 17 recommended); install it "
            "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME."
        )
    return java

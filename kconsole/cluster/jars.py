"""Jars resolved by Maven into a per-user cache: Kafka + ZooKeeper for the embedded cluster, and
Spark's Kafka connector for the PySpark jobs.

The first run needs `mvn` and Maven Central; after that the cache is reused and works offline.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
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


def kafka_major(version: str) -> int:
    """3 for "3.9.2", 4 for "4.4.0"."""
    try:
        return int(version.split(".", 1)[0])
    except ValueError as exc:
        raise ClusterError(f"not a Kafka version: {version!r}") from exc


def ensure_kafka_jars(version: str = KAFKA_VERSION, *, quiet: bool = True) -> Path:
    """Return the lib dir for `version`, resolving it with Maven first if it is not cached.

    3.x gets ZooKeeper and reload4j (kafka.pom.xml); 4.x, which is KRaft only, gets log4j2
    with slf4j 2 (kafka4.pom.xml)."""
    return _resolve_with_maven(
        "kafka4.pom.xml" if kafka_major(version) >= 4 else "kafka.pom.xml",
        kafka_lib_dir(version),
        {"kafka.version": version},
        what=f"Kafka {version}",
        expect="kafka_2.13-*.jar",
        quiet=quiet,
    )


# --------------------------------------------------------------------------------------------
# Spark's Kafka connector, for the installed pyspark
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PySparkInstall:
    """The pip-installed pyspark: its home (SPARK_HOME of a pip install), version and jars."""

    home: Path
    version: str
    scala_binary: str  # "2.13": the connector's artifact suffix must match Spark's Scala
    jar_names: frozenset[str]

    def ships(self, artifact_id: str) -> bool:
        """True when pyspark's jars/ already has some version of this artifact."""
        prefix = artifact_id + "-"
        return any(
            n.startswith(prefix) and n[len(prefix) : len(prefix) + 1].isdigit()
            for n in self.jar_names
        )

    def spark_class(self) -> Path:
        """bin/spark-class, which starts a standalone master or worker from this install."""
        return self.home / "bin" / "spark-class"


def pyspark_install() -> PySparkInstall:
    """Find pyspark without importing it (importing starts nothing, but costs ~0.5 s)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ToolMissing("pyspark is not installed in this Python (pip install pyspark)")
    home = Path(next(iter(spec.submodule_search_locations)))
    names = frozenset(p.name for p in (home / "jars").glob("*.jar"))
    scala = next(
        (m.group(1) for n in names if (m := re.match(r"scala-library-(\d+\.\d+)\.", n))), "2.13"
    )
    return PySparkInstall(home, importlib.metadata.version("pyspark"), scala, names)


def spark_kafka_dir(install: PySparkInstall | None = None) -> Path:
    """Where the connector jars for one Spark version (and Scala binary version) live."""
    inst = install or pyspark_install()
    return paths.cache_dir() / f"spark-kafka-{inst.version}_{inst.scala_binary}" / "jars"


def spark_kafka_jars_ready(install: PySparkInstall | None = None) -> bool:
    """True when the connector for the installed pyspark is already in the cache."""
    return (spark_kafka_dir(install) / _MARKER).exists()


def spark_kafka_coordinate(install: PySparkInstall | None = None) -> str:
    """The Maven coordinate, as `spark-submit --packages` takes it."""
    inst = install or pyspark_install()
    return f"org.apache.spark:spark-sql-kafka-0-10_{inst.scala_binary}:{inst.version}"


def ensure_spark_kafka_jars(
    install: PySparkInstall | None = None, *, quiet: bool = True
) -> list[Path]:
    """The connector jars for the installed pyspark (resolved with Maven on first use), minus
    every library pyspark already ships: pass them as `spark.jars`."""
    inst = install or pyspark_install()
    lib = _resolve_with_maven(
        "spark-kafka.pom.xml",
        spark_kafka_dir(inst),
        {"spark.version": inst.version, "scala.binary": inst.scala_binary},
        what=f"Spark's Kafka connector ({spark_kafka_coordinate(inst)})",
        expect="spark-sql-kafka-0-10_*.jar",
        quiet=quiet,
        keep=lambda artifact_id: not inst.ships(artifact_id),
    )
    return sorted(lib.glob("*.jar"))


# --------------------------------------------------------------------------------------------
# Maven
# --------------------------------------------------------------------------------------------


def _resolve_with_maven(
    pom_name: str,
    lib: Path,
    props: dict[str, str],
    *,
    what: str,
    expect: str,
    quiet: bool = True,
    keep: Callable[[str], bool] | None = None,
) -> Path:
    """Copy the runtime closure of a pom in kconsole/cluster/maven into `lib` (once).

    `keep(artifact_id)` False drops that artifact's jar after resolving.
    """
    if (lib / _MARKER).exists():
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing(
            f"Maven (mvn) is needed once to fetch the jars of {what} into {lib.parent}; "
            "install it (Debian/Ubuntu: apt-get install maven) and retry."
        )
    pom = resources.files("kconsole.cluster") / "maven" / pom_name
    lib.parent.mkdir(parents=True, exist_ok=True)
    # Resolve into a sibling temp dir and rename, so an interrupted fetch never looks complete.
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        out = Path(tmp) / "lib"
        listing = Path(tmp) / "dependencies.txt"
        with resources.as_file(pom) as pom_path:
            cmd = [
                mvn,
                "-B",
                "-f",
                str(pom_path),
                *(f"-D{k}={v}" for k, v in props.items()),
                "dependency:copy-dependencies",
                "dependency:list",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={out}",
                f"-DoutputFile={listing}",
            ]
            if quiet:
                cmd.insert(2, "-q")
            proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not any(out.glob(expect)):
            lines = (proc.stdout + proc.stderr).strip().splitlines()
            raise ClusterError(
                f"Maven could not resolve {what} (exit {proc.returncode}): check network access "
                "to Maven Central (or a proxy in ~/.m2/settings.xml), and that this version is "
                "published there.",
                log_lines=lines[-25:],
            )
        if keep is not None:
            for artifact_id, file_name in _listed_jars(listing):
                if not keep(artifact_id):
                    (out / file_name).unlink(missing_ok=True)
        (out / _MARKER).write_text(" ".join(props.values()) + "\n")
        if lib.exists():
            shutil.rmtree(lib)
        out.rename(lib)
    return lib


def _listed_jars(listing: Path) -> list[tuple[str, str]]:
    """(artifactId, jar file name) of each line of `mvn dependency:list` output."""
    out = []
    for line in listing.read_text().splitlines():
        # groupId:artifactId:type[:classifier]:version:scope, maybe followed by " -- module x"
        parts = line.strip().split(" ")[0].split(":")
        if len(parts) not in (5, 6) or parts[2] != "jar":
            continue
        artifact, version = parts[1], parts[-2]
        classifier = f"-{parts[3]}" if len(parts) == 6 else ""
        out.append((artifact, f"{artifact}-{version}{classifier}.jar"))
    return out


def java_executable() -> str:
    """The java binary: $JAVA_HOME/bin/java if set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ToolMissing(
            "Java is needed to run the local Kafka cluster and the Spark jobs (Java 17 "
            "recommended); install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) "
            "or set JAVA_HOME."
        )
    return java

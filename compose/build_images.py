"""Build the compose clusters' images: kconsole-kafka:<version> from the jars kconsole resolves.

    .venv/bin/python compose/build_images.py                 # the ZooKeeper and KRaft versions
    .venv/bin/python compose/build_images.py --base-image eclipse-temurin:17-jre
    .venv/bin/python compose/build_images.py --version 3.9.2 --rebuild

`make compose-images` runs it (and `make compose-up` first). With no --base-image the Kafka image
goes on kconsole-jre:17 if it exists, else on the public JRE image if it is present or can be
pulled, else on kconsole-jre:17 built here from Debian packages (no image registry needed; root
and debootstrap are). Exit 0 when every image exists at the end, 1 (saying why) otherwise.
"""

from __future__ import annotations

import argparse
import sys

from kconsole.cluster.docker.control import connect
from kconsole.cluster.docker.images import build_images
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.settings import KAFKA_VERSION, KRAFT_KAFKA_VERSION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--version",
        action="append",
        dest="versions",
        help=f"a Kafka version (repeatable; default {KAFKA_VERSION} and {KRAFT_KAFKA_VERSION})",
    )
    parser.add_argument("--base-image", help="a Java 17 image to build Kafka on")
    parser.add_argument("--rebuild", action="store_true", help="build images that exist again")
    args = parser.parse_args(argv)
    versions = args.versions or [KAFKA_VERSION, KRAFT_KAFKA_VERSION]
    try:
        client = connect()
        for line in build_images(
            client,
            versions,
            base_image=args.base_image,
            rebuild=args.rebuild,
            progress=lambda msg: print(f"  {msg}", flush=True),
        ):
            print(line, flush=True)
    except ClusterError as exc:
        print(f"build_images: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

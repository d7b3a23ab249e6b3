#!/usr/bin/env bash
# Tools only the benchmarks compare against (make bench runs this): kcat, for the describe
# section's metadata listing. Installed with apt-get when missing and we may; otherwise the
# describe section says kcat was not there and compares against Kafka's own tools only.
set -euo pipefail
say() { printf '[bench-tools] %s\n' "$*"; }
if command -v kcat >/dev/null 2>&1; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
  say "installing kcat with apt-get"
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null 2>&1 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null; }; then
    exit 0
  fi
fi
say "kcat is not installed (and could not be installed here): the describe section leaves it out"

#!/usr/bin/env bash
# Sets up everything kconsole needs on a fresh clone, and is safe to run again:
#   - Java and Maven (installed with apt-get when missing and we may; otherwise a clear error),
#   - iptables, for the network faults (installed the same way; without it only they refuse),
#   - a virtualenv in .venv with kconsole and its test tools,
#   - the Kafka jars (the ZooKeeper mode's 3.9.x and the KRaft mode's 4.x) and Spark's Kafka
#     connector (for jobs/), resolved once by Maven into the per-user cache.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }

need_apt=()
command -v java >/dev/null 2>&1 || [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]] \
  || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
if ((${#need_apt[@]})); then
  if command -v apt-get >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
    say "installing ${need_apt[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "kconsole needs ${need_apt[*]}: install them with your package manager and re-run." >&2
    exit 1
  fi
fi
# The network faults (isolate) drop packets with iptables; everything else works without it.
if ! command -v iptables >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
    say "installing iptables with apt-get (network faults)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null
  else
    say "no iptables: the network faults will refuse (install iptables, run as root)"
  fi
fi

PY=${PYTHON:-}
if [[ -z "$PY" ]]; then
  for cand in python3.13 python3.12 python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY=$cand; break
    fi
  done
fi
if [[ -z "$PY" ]]; then
  echo "kconsole needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi

if [[ ! -x .venv/bin/python ]]; then
  say "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.kconsole-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  say "installing kconsole and its dependencies into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
  touch "$stamp"
fi

.venv/bin/kconsole cluster fetch
kraft_version=$(.venv/bin/python -c \
  'from kconsole.cluster.settings import KRAFT_KAFKA_VERSION; print(KRAFT_KAFKA_VERSION)')
.venv/bin/kconsole cluster fetch --kafka-version "$kraft_version"
.venv/bin/kconsole jobs fetch

# The two commands a newcomer needs (see README.md):
#   make console   set everything up, start the local cluster, open the console
#   make test      set everything up, run the whole test suite (what CI runs)
#   make bench     every benchmark against real local clusters -> bench/RESULTS.md
#   make compose-up / compose-down   the docker compose cluster instead (needs a Docker engine
#                  and Compose v2; COMPOSE=... names another command)
.PHONY: setup console test lint bench compose-up compose-down

COMPOSE ?= docker compose
COMPOSE_ARGS = -p kconsole -f compose/docker-compose.yml

setup:
	@bash scripts/setup.sh

console: setup
	@.venv/bin/kconsole cluster up
	@.venv/bin/kconsole

test: setup
	@.venv/bin/ruff check kconsole tests jobs bench
	@.venv/bin/lint-imports --no-cache >/dev/null
	@.venv/bin/mypy
	@.venv/bin/python -m pytest

lint: setup
	@.venv/bin/ruff check kconsole tests jobs bench
	@.venv/bin/ruff format --check kconsole tests jobs bench
	@.venv/bin/mypy
	@.venv/bin/lint-imports

bench: setup
	@bash scripts/bench-tools.sh
	@.venv/bin/python bench/suite.py $(BENCH_ARGS)

compose-up:
	$(COMPOSE) $(COMPOSE_ARGS) up -d

compose-down:
	$(COMPOSE) $(COMPOSE_ARGS) down -v

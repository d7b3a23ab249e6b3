# The two commands a newcomer needs (see README.md):
#   make console   set everything up, start the local cluster, open the console
#   make test      set everything up, run the whole test suite (what CI runs)
#   make docs     serve the manual (docs/, MkDocs) at http://127.0.0.1:8000
#   make bench     every benchmark against real local clusters -> bench/RESULTS.md
#   make compose-images   build kconsole-kafka:<version> (from Debian packages and kconsole's jars
#                  when no image registry answers; BASE_IMAGE=... builds on a JRE image you have)
#   make compose-up / compose-down   the docker compose cluster instead of the local one (needs a
#                  running Docker engine; Compose v2 `docker compose` or v1 `docker-compose`).
#                  KRAFT=1: the KRaft file; PROJECT=name: another compose project
.PHONY: setup console test lint docs bench compose-images compose-up compose-down

# Compose v2 when the plugin answers, else the standalone v1.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
PROJECT ?= $(or $(COMPOSE_PROJECT_NAME),kconsole)
COMPOSE_FILE = compose/docker-compose$(if $(KRAFT),.kraft).yml
COMPOSE_ARGS = -p $(PROJECT) -f $(COMPOSE_FILE)

setup:
	@bash scripts/setup.sh

console: setup
	@.venv/bin/kconsole cluster up
	@.venv/bin/kconsole

test: setup
	@.venv/bin/ruff check kconsole tests jobs bench compose
	@.venv/bin/lint-imports --no-cache >/dev/null
	@.venv/bin/mypy
	@NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
	@.venv/bin/python scripts/test.py

lint: setup
	@.venv/bin/ruff check kconsole tests jobs bench compose
	@.venv/bin/ruff format --check kconsole tests jobs bench compose
	@.venv/bin/mypy
	@.venv/bin/lint-imports

docs: setup
	@NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve

bench: setup
	@bash scripts/bench-tools.sh
	@.venv/bin/python bench/suite.py $(BENCH_ARGS)

compose-images: setup
	@.venv/bin/python compose/build_images.py $(if $(BASE_IMAGE),--base-image $(BASE_IMAGE))

compose-up: compose-images
	$(COMPOSE) $(COMPOSE_ARGS) up -d

compose-down:
	$(COMPOSE) $(COMPOSE_ARGS) down -v

# The two commands a newcomer needs (see README.md):
#   make console   set everything up, start the local cluster, open the console
#   make test      set everything up, run the whole test suite (what CI runs)
#   make bench     every benchmark against real local clusters -> bench/RESULTS.md
.PHONY: setup console test lint bench

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

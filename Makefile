# Two commands do everything on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
ENV := scripts/ros_env.sh

.PHONY: setup demo test bench clean previews

setup:
	@scripts/setup_env.sh

demo: setup
	@$(ENV) react-ros demo umi

test: setup
	@$(ENV) python -m pytest -q test

bench: setup
	@$(ENV) python bench/bench_umi.py
	@$(ENV) python bench/bench_react.py
	@$(ENV) python bench/bench_robotwin.py
	@$(ENV) python bench/bench_truetrace.py
	@$(ENV) python bench/bench_objects.py
	@$(ENV) python bench/bench_convert.py

previews: setup  # docs/previews/<kind>.png from each kind's sample
	@$(ENV) python scripts/make_previews.py

clean:
	rm -rf .venv build install log .pytest_cache

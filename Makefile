# Two commands do everything on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
ENV := scripts/ros_env.sh

.PHONY: setup demo test bench clean previews layouts cli-reference

setup:
	@scripts/setup_env.sh

demo: setup
	@$(ENV) react-ros demo

test: setup
	@$(ENV) python -m pytest -q --durations=15 test  # the slowest fifteen at the end

bench: setup
	@for b in bench/bench_*.py; do $(ENV) python $$b || exit 1; done

previews: setup  # docs/previews/<kind>.png from each kind's sample
	@$(ENV) python scripts/make_previews.py

layouts: setup  # react_ros/kinds/<kind>/<kind>.foxglove.json from each kind's foxglove_layout.yaml
	@$(ENV) python scripts/foxglove_layouts.py

cli-reference: setup  # docs/cli.md from the parser's --help
	@$(ENV) python scripts/cli_reference.py

clean:
	rm -rf .venv build install log .pytest_cache

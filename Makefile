# Two entry points for a newcomer: `make demo` (the main job, end to end) and `make test`.
# Both create .venv with Python 3.11+ and install what they need; nothing else is required.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,service,redis,openvino]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m rated.demo

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/latency.py

clean:
	rm -rf $(VENV) .pytest_cache

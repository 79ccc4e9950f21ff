# Two commands matter: `make demo` and `make test`. Both create .venv if missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PIP_FLAGS ?= --disable-pip-version-check -q

.PHONY: demo test test-slow lint install install-dev bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip $(PIP_FLAGS) install --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip $(PIP_FLAGS) install -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml examples/jobshop/pyproject.toml | $(PY)
	$(PY) -m pip $(PIP_FLAGS) install -e '.[dev]'
	$(PY) -m pip $(PIP_FLAGS) install --no-deps -e examples/jobshop  # the example plugin kind (contract suite)
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	@echo "hint: open the 'live view' URL printed below in a browser to watch the run (add --ui to keep it open)"
	$(VENV)/bin/blockopt run routing --map random-32-32-10 --scen random-32-32-10-random-1 --robots 50 \
		--initial shortest --agents 3 --merge checked --seed 1 --time-limit 30 --report out/demo/report.json

# The suites marked slow (end-to-end runs of whole teams, about 5 minutes here) run in `make test-slow`;
# CI runs both.
test: install-dev
	$(PY) -m pytest -q -m "not slow"

# ruff (rules, import order, complexity, 110 columns; existing violations are baselined in pyproject.toml)
# and mypy with the stricter settings of pyproject.toml, on the packages and the example plugin.
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy tasks coordinator agents blockopt examples/jobshop/blockopt_jobshop

test-slow: install-dev
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis

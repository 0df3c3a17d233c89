# dynascope: two commands on a fresh machine.
#   make lab   install into .venv (torch 2.13.0 CPU, graphviz's dot) and open JupyterLab on the quickstart
#   make test  install, then run every test (unit, capture, viz, notebooks via nbval, browser end-to-end)
#   make compat TORCH=2.15.0   the same suite (browser, Makefile-recipe and bench-harness tests excluded) on another torch, in .venv-torch-2.15.0
# Both are idempotent and quiet when everything is already installed. They work as root (containers,
# cloud notebooks) and as a normal user: apt runs through sudo only for a normal user, and JupyterLab
# gets --allow-root only for root. `make lab LAB_ARGS="--no-browser --port=8888"` adds JupyterLab options.

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/pip -q --disable-pip-version-check
STAMP   := $(VENV)/.stamp-install
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)
SUDO    := $(if $(IS_ROOT),,sudo)
APT     := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -o DPkg::Lock::Timeout=300

.PHONY: lab test compat bench bench-quick bench-install notebooks install dot chromium clean mutants

install: $(STAMP) dot

$(BIN)/python:
	@$(PY) -m venv $(VENV)

# torch first, pinned: the CPU wheel on disk. Any other spec would pull gigabytes of CUDA.
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "installing dynascope into $(VENV) (torch==2.13.0 CPU, test extras, JupyterLab)..."
	@$(PIP) install torch==2.13.0 numpy 2>&1 | grep -v '^WARNING: Location' || true
	@$(BIN)/python -c "import torch" || { echo "torch failed to install"; exit 1; }
	@$(PIP) install -e '.[test]' jupyterlab 2>&1 | grep -v '^WARNING: Location' || true
	@$(BIN)/python -c "import tracer, viz, nbval, anywidget" || { echo "dynascope failed to install"; exit 1; }
	@touch $@

dot:
	@command -v dot >/dev/null 2>&1 || { echo "installing graphviz (dot) with apt..."; \
		$(APT) update -qq >/dev/null && $(APT) install -y -qq graphviz >/dev/null; }

chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium with apt (browser tests, benchmarks)..."; \
		$(APT) update -qq >/dev/null && $(APT) install -y -qq chromium >/dev/null; }

# JupyterLab refuses to run as root unless told --allow-root; a normal user must not need it.
LAB_ARGS ?=
lab: install
	@$(BIN)/jupyter lab $(if $(IS_ROOT),--allow-root) $(LAB_ARGS) notebooks/00_quickstart.ipynb

test: install chromium
	@$(BIN)/python -m pytest -q -p no:cacheprovider --durations=25 tests notebooks --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

# Another torch release in its own venv (README "Torch releases"). The registry serves each release as a
# CUDA build that runs on the CPU (~1 min); pip reads no config file here, since this machine's caps torch
# at the releases on its disk. Notebooks run with their stored outputs; browser tests run on the default only.
# COMPAT_PATHS picks what runs (default: the tests and the notebooks).
TORCH ?=
COMPAT_PATHS ?= tests notebooks
.venv-torch-%/.stamp-install: pyproject.toml
	@echo "installing torch==$* and dynascope into .venv-torch-$* ..."
	@[ -x .venv-torch-$*/bin/python ] || $(PY) -m venv .venv-torch-$*
	@PIP_CONFIG_FILE=/dev/null .venv-torch-$*/bin/pip -q --disable-pip-version-check install torch==$* numpy \
		2>&1 | grep -v '^WARNING: Location' || true
	@.venv-torch-$*/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$*')" \
		|| { echo "torch==$* failed to install"; exit 1; }
	@PIP_CONFIG_FILE=/dev/null .venv-torch-$*/bin/pip -q --disable-pip-version-check install -e '.[test]' jupyterlab \
		2>&1 | grep -v '^WARNING: Location' || true
	@.venv-torch-$*/bin/python -c "import torch, sys, tracer, viz, nbval; sys.exit(torch.__version__.split('+')[0] != '$*')" \
		|| { echo "dynascope failed to install beside torch==$*"; exit 1; }
	@touch $@

compat: dot
	@[ -n "$(TORCH)" ] || { echo "usage: make compat TORCH=2.15.0"; exit 2; }
	@$(MAKE) --no-print-directory .venv-torch-$(TORCH)/.stamp-install
	@.venv-torch-$(TORCH)/bin/python -m pytest -q -p no:cacheprovider --durations=25 -m "not browser and not tooling and not bench" $(COMPAT_PATHS) --nbval \
		--nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

# Rebuild every tutorial notebook from notebooks/src/ and re-execute it (after changing what it shows).
notebooks: install
	@$(BIN)/python notebooks/_build.py

# Benchmarks need tlparse (the reference report) and Chromium (first paints). Each figure is printed when
# measured; the last stdout line is the JSON of everything measured, then one summary line of targets met
# and missed (exit 1 when a benchmark failed). `make bench` takes about half an hour, `make bench-quick`
# (tiny models, one browser figure: the explorer's first paint) a few minutes. Results: bench/RESULTS.md.
bench-install: install chromium
	@$(PIP) install -e '.[bench]' 2>&1 | grep -v '^WARNING: Location' || true

bench: bench-install
	@$(BIN)/python -m bench

bench-quick: bench-install
	@$(BIN)/python -m bench --quick

# Mutation testing of tracer/model, the HOP feed table with its adapters and the HOP tree ([tool.mutmut] in pyproject.toml);
# CPU heavy (two workers), results in mutants/ (git-ignored). Kill rate and survivors: bench/RESULTS.md.
mutants: install
	@$(BIN)/mutmut run --max-children 2; $(BIN)/mutmut results

clean:
	rm -rf $(VENV) .venv-torch-* *.egg-info

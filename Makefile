# hookviz course: `make lab` to learn, `make test` to check that every notebook still tells the truth.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hookviz-installed
# Where pip finds a CPU-only torch 2.13.0 if your machine has none cached, e.g.
#   make lab TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
PIP_EXTRA := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),)
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
# One thread per kernel: outputs are reproducible and two parallel test workers do not fight.
export OMP_NUM_THREADS ?= 1
export PYTHONHASHSEED := 0
# pip's exit status survives this filter (pipefail); only its noise about local index folders goes.
QUIET_PIP := { grep -v "^WARNING: Location" || true; }
NBVAL := -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: setup lab test test-unit test-notebooks test-browser lint execute student weights bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet --upgrade pip 2>&1 | $(QUIET_PIP)
	set -o pipefail; $(PY) -m pip install --quiet $(PIP_EXTRA) -e '.[test]' 2>&1 | $(QUIET_PIP)
	$(PY) -c "import torch, sys; v = torch.__version__; sys.exit(0 if v.startswith('2.13.0') and not torch.version.cuda else f'expected CPU torch 2.13.0, got {v} (cuda {torch.version.cuda})')"
	touch $(STAMP)

lab: setup
	@echo "Starting JupyterLab on notebooks/ - open the http://127.0.0.1:... URL it prints (Ctrl+C to stop)."
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(ROOT_FLAG) $(LAB_ARGS)

test: setup lint test-unit test-notebooks test-browser

lint: setup
	$(VENV)/bin/ruff check .

# repo2docker (to check that binder/ is detected) lives in its own small venv: its pins are not the course's.
R2D := $(VENV)/repo2docker/bin/repo2docker
$(R2D): | $(STAMP)
	$(PYTHON) -m venv $(VENV)/repo2docker
	set -o pipefail; $(VENV)/repo2docker/bin/pip install --quiet jupyter-repo2docker==2026.4.0 2>&1 | $(QUIET_PIP)

test-unit: setup $(R2D)
	REPO2DOCKER=$(R2D) $(PY) -m pytest -p no:cacheprovider -q tests

test-notebooks: setup
	$(PY) -m pytest $(NBVAL) -n 2 --dist loadscope -q notebooks

test-browser: setup
	$(PY) -m pytest -p no:cacheprovider -q -m browser tests/browser

# Re-execute notebooks in place and store their outputs: `make execute` (all) or `make execute NB=notebooks/01_x.ipynb`
execute: setup
	for nb in $(or $(NB),$(NOTEBOOKS)); do \
	  $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=300 "$$nb" || exit 1; \
	done

weights: setup
	$(PY) scripts/train_digits_cnn.py

clean:
	rm -rf $(VENV) student .pytest_cache

# Student copies of the notebooks (solutions removed) in student/, which git ignores.
student: setup
	$(PY) scripts/make_student.py notebooks student

# Speed and memory checks; each script prints ratios measured in one run.
bench: setup
	for f in bench/bench_*.py; do $(PY) "$$f" || exit 1; done

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
# How notebooks are checked (sanitizer, kernel) lives in conftest.py, what `pytest` collects in pyproject.toml:
# the targets below add only parallel workers. nbval needs loadscope: one notebook's cells stay on one kernel.
XDIST := -n 2 --dist loadscope
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: setup lab test test-course test-unit test-notebooks test-notebooks-generic test-browser test-torch torch-env \
	test-colab colab-env test-summary lint execute student weights bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet --upgrade pip 2>&1 | $(QUIET_PIP)
	set -o pipefail; $(PY) -m pip install --quiet $(PIP_EXTRA) -e '.[test]' 2>&1 | $(QUIET_PIP)
	$(PY) -c "import torch, sys; v = torch.__version__; sys.exit(0 if v.startswith('2.13.0') and not torch.version.cuda else f'expected CPU torch 2.13.0, got {v} (cuda {torch.version.cuda})')"
	$(lab-extension)
	touch $(STAMP)

# JupyterLab for learners: the student copies only (made or refreshed first; a copy you edited is kept), opened
# on 00_start_here. Teachers: `make teacher-lab` opens the whole course folder, solutions and outputs included.
lab: student-lab

# The learners' JupyterLab: binder/overrides.json (no news pop-up, widget state saved, closing a tab ends its
# kernel, no "last modified" column) and, until the learner changes it, binder/workspace.json (a file browser
# wide enough for every notebook's whole name). The workspace lives in the venv: ~/.jupyter is not touched.
LAB_WORKSPACES := $(VENV)/share/jupyter/lab/workspaces
LAB_WORKSPACE_FILE := $(LAB_WORKSPACES)/default-37a8.jupyterlab-workspace
define lab-settings
	install -D -m 644 binder/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	test -e $(LAB_WORKSPACE_FILE) || install -D -m 644 binder/workspace.json $(LAB_WORKSPACE_FILE)
	$(lab-extension)
endef
# hookviz's JupyterLab helper (labextension/: links to a section of another notebook open at that section; the widgets
# draw Chinese with hookviz's font), prebuilt into hookviz/labextension and linked where JupyterLab looks for it.
# Binder (binder/postBuild) and the workshop hub (tljh.sh) link it the same way. `make labextension` rebuilds it.
define lab-extension
	mkdir -p $(VENV)/share/jupyter/labextensions
	ln -sfn $(CURDIR)/hookviz/labextension $(VENV)/share/jupyter/labextensions/hookviz-lab
endef

.PHONY: labextension
labextension:
	cd labextension && npm ci --no-audit --no-fund && npx tsc && \
		node node_modules/@jupyter/builder/lib/build-labextension.js \
		--core-package-file node_modules/@jupyterlab/core-meta/core.package.json .
	$(PY) -c "import runpy; runpy.run_path('scripts/make_cjk_font.py')['copy_to_lab']()"
LAB_DIRS := --LabApp.workspaces_dir=$(LAB_WORKSPACES)

.PHONY: teacher-lab
teacher-lab: setup
	$(lab-settings)
	@echo "Starting JupyterLab on notebooks/ (teacher copies, with solutions) and student/: the http://127.0.0.1:... URL it prints opens notebooks/00_start_here.ipynb (Ctrl+C to stop)."
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(ROOT_FLAG) $(LAB_DIRS) $(LAB_ARGS) --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

# Everything: lint, then exactly what users type (`pytest --nbval`: unit tests and every notebook), the
# notebooks once more on PyTorch's generic CPU kernels, then JupyterLab in a real browser; then a summary of
# what ran and what did not (with the command that enables each skipped part).
# Every pytest run goes through the run guard (tests/run_guard.py): a run that skipped tests for a reason not
# on its allow-list, or collected a notebook and ran none of its cells, fails. HOOKVIZ_REQUIRE=all (as CI
# sets it) also fails on the allowed skips, e.g. a missing Chromium. Before the browser tests, `make site` builds
# the web site and checks its links (the browser tests read it too).
test: setup lint test-course test-notebooks-generic site test-browser
	@$(PY) scripts/test_summary.py course notebooks-generic-$(CPU) browser

# The summary of the latest run of each stage (make test prints it at the end): `make test-summary`.
REPORTS := .test-reports
test-summary:
	@$(PY) scripts/test_summary.py --all

lint: setup
	$(VENV)/bin/ruff check .

# repo2docker (to check that binder/ is detected) lives in its own small venv: its pins are not the course's.
R2D := $(VENV)/repo2docker/bin/repo2docker
$(R2D): | $(STAMP)
	$(PYTHON) -m venv $(VENV)/repo2docker
	set -o pipefail; $(VENV)/repo2docker/bin/pip install --quiet jupyter-repo2docker==2026.4.0 2>&1 | $(QUIET_PIP)

# `pytest --nbval` with no path, as the README tells users to type it, in two workers.
test-course: setup $(R2D)
	HOOKVIZ_STAGE=course HOOKVIZ_RUN_REPORT=$(REPORTS)/course.json REPO2DOCKER=$(R2D) $(PY) -m pytest --nbval $(XDIST) -q

test-unit: setup $(R2D)
	REPO2DOCKER=$(R2D) $(PY) -m pytest -q tests

test-notebooks: setup
	$(PY) -m pytest --nbval $(XDIST) -q notebooks

# Stored outputs must not depend on the CPU: re-check every notebook on the generic (no AVX) kernels, as
# on many laptops and ARM machines. `make test-notebooks-generic CPU=avx2` checks another kernel path.
# The English notebooks only (EDITIONS=all adds notebooks/zh/): the Chinese ones carry exactly the same code
# and outputs, which tests/test_zh.py proves on every run (scripts/make_zh.py --check).
CPU ?= default
EDITIONS ?= en
EDITION_PATHS := $(if $(filter all,$(EDITIONS)),notebooks,$(NOTEBOOKS))
test-notebooks-generic: setup
	HOOKVIZ_STAGE=notebooks-generic-$(CPU) HOOKVIZ_RUN_REPORT=$(REPORTS)/notebooks-generic-$(CPU).json \
	ATEN_CPU_CAPABILITY=$(CPU) $(PY) -m pytest --nbval $(XDIST) -q $(EDITION_PATHS)

# The PyTorch releases the course supports (hookviz/releases.py): 2.8 to 2.14, proven on 2.8.0 (oldest), 2.11.0
# (Colab's: `make test-colab`), 2.13.0 (the pin: `make test`) and 2.14.1 (newest pip serves here). Each other
# release runs in its own venv (the pinned .venv is never touched):
#   make test-torch TORCH=2.8.0        (the English notebooks; EDITIONS=all adds the Chinese ones)
#   make test-releases                 (2.8.0 and 2.14.1)
# installs that torch from pip (a CUDA build that runs on the CPU, a few GB) plus the course's other pins.
TORCH ?= 2.14.1
OLDEST_TORCH := 2.8.0
NEWEST_TORCH := 2.14.1
TORCH_VENV := .venv-torch-$(TORCH)
# Disk, measured: .venv-torch-2.8.0 7.1 GB, .venv-torch-2.14.1 6.0 GB, .venv-colab 5.0 GB (mostly NVIDIA
# libraries). pip keeps no copy of those wheels in its cache (--no-cache-dir), and `DROP_VENV=1` removes a venv
# once its tests passed (CI does: the stages then need one of them at a time, not all three).
TORCH_VENV_GB := 7.5
COLAB_VENV_GB := 5.5
NO_PIP_CACHE := --no-cache-dir
$(TORCH_VENV)/.ready: pyproject.toml scripts/requirements.py
	$(PYTHON) scripts/disk_check.py --need-gb $(TORCH_VENV_GB) --what "torch $(TORCH) ($(TORCH_VENV))"
	$(PYTHON) -m venv $(TORCH_VENV)
	set -o pipefail; $(TORCH_VENV)/bin/pip install --quiet $(NO_PIP_CACHE) $(PIP_EXTRA) torch==$(TORCH) $$($(PYTHON) scripts/requirements.py --without torch) 2>&1 | $(QUIET_PIP)
	set -o pipefail; $(TORCH_VENV)/bin/pip install --quiet --no-deps -e . 2>&1 | $(QUIET_PIP)
	$(TORCH_VENV)/bin/python -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$(TORCH)' else f'expected torch $(TORCH), got {torch.__version__}')"
	touch $@

torch-env: $(TORCH_VENV)/.ready

test-torch: torch-env
	HOOKVIZ_STAGE=torch-$(TORCH) HOOKVIZ_RUN_REPORT=$(REPORTS)/torch-$(TORCH).json \
	$(TORCH_VENV)/bin/python -m pytest --nbval $(XDIST) -q $(EDITION_PATHS)
	$(if $(DROP_VENV),rm -rf $(TORCH_VENV))

.PHONY: test-releases atlas-snapshot
test-releases:
	$(MAKE) test-torch TORCH=$(OLDEST_TORCH) DROP_VENV=$(DROP_VENV)
	$(MAKE) test-torch TORCH=$(NEWEST_TORCH) DROP_VENV=$(DROP_VENV)

# Store the hook atlas of another release (hookviz/assets/atlas/atlas-torch-TORCH.json), in that release's venv:
#   make atlas-snapshot TORCH=2.9.1
atlas-snapshot: torch-env
	$(TORCH_VENV)/bin/python -c "from hookviz import atlas; print(atlas.write_snapshot(atlas.run_atlas()))"

# Colab-true: Google Colab's own package versions (scripts/colab_pins.txt, read from Google's published list of
# what a Colab runtime has installed, with its date), in their own venv (.venv-colab): Colab's older PyTorch,
# numpy, matplotlib, IPython 7, ipykernel 6 and ipywidgets 7, no JupyterLab. Every notebook (both editions)
# must pass nbval there, and the widget tests prove that each widget falls back to its static picture:
#   make test-colab
# Refresh the pins from a newer copy of Google's list: python scripts/colab_pins.py --refresh FILE --date DATE
COLAB_VENV := .venv-colab
COLAB_WITHOUT := $(foreach p,torch numpy matplotlib ipython ipywidgets ipykernel notebook anywidget transformers jupyterlab \
	playwright ruff py-rattler,--without $(p))
$(COLAB_VENV)/.ready: pyproject.toml scripts/requirements.py scripts/colab_pins.txt
	rm -rf $(COLAB_VENV)
	$(PYTHON) scripts/disk_check.py --need-gb $(COLAB_VENV_GB) --what "Colab's packages ($(COLAB_VENV))"
	$(PYTHON) -m venv $(COLAB_VENV)
	set -o pipefail; $(COLAB_VENV)/bin/pip install --quiet $(NO_PIP_CACHE) $(PIP_EXTRA) $$($(PYTHON) scripts/colab_pins.py --requirements) \
	  $$($(PYTHON) scripts/requirements.py $(COLAB_WITHOUT)) 2>&1 | $(QUIET_PIP)
	set -o pipefail; $(COLAB_VENV)/bin/pip install --quiet --no-deps -e . 2>&1 | $(QUIET_PIP)
	$(COLAB_VENV)/bin/python scripts/colab_pins.py --check-env
	touch $@

colab-env: $(COLAB_VENV)/.ready

test-colab: colab-env
	HOOKVIZ_STAGE=colab HOOKVIZ_RUN_REPORT=$(REPORTS)/colab.json \
	$(COLAB_VENV)/bin/python -m pytest --nbval $(XDIST) -q notebooks tests/test_widgets_static_fallback.py
	$(if $(DROP_VENV),rm -rf $(COLAB_VENV))

test-browser: setup site
	HOOKVIZ_STAGE=browser HOOKVIZ_RUN_REPORT=$(REPORTS)/browser.json $(PY) -m pytest -q -m browser tests/browser

# The course on the web: `make site` builds _site/ (index.html at its root; English there, Chinese in _site/zh/) from
# the committed notebooks and their stored outputs (nothing is executed), then checks every link and anchor
# (scripts/check_site.py). Its tools (Sphinx + MyST-NB + the Sphinx Book Theme, Pagefind) are pinned in
# site/requirements.txt and live in their own venv, .venv/site, like repo2docker's: the course's pins are not
# touched. It rebuilds only when a page's source, the site's files or the tools changed.
# Look at it: python -m http.server -d _site   (then http://127.0.0.1:8000/).
SITE_VENV := $(VENV)/site
SITE_READY := $(SITE_VENV)/.ready
SITE_CHECKED := _site/.checked
SITE_INPUTS := $(wildcard notebooks/*.ipynb notebooks/zh/*.ipynb notebooks/*.md notebooks/zh/*.md notebooks/questions.yml \
	README.md README.zh.md SETUP.md TEACHING.md workshop/*.md workshop/*/*.md workshop/zh/*/*.md \
	site/*.* site/_static/* site/_templates/* hookviz/*.py hookviz/assets/atlas/*.json) \
	scripts/build_site.py scripts/check_site.py
$(SITE_READY): site/requirements.txt | $(STAMP)
	$(PYTHON) -m venv $(SITE_VENV)
	set -o pipefail; $(SITE_VENV)/bin/pip install --quiet -r site/requirements.txt 2>&1 | $(QUIET_PIP)
	touch $@

$(SITE_CHECKED): $(SITE_READY) $(SITE_INPUTS)
	$(PY) scripts/build_site.py --sphinx "$(SITE_VENV)/bin/python -m sphinx" --pagefind "$(SITE_VENV)/bin/python -m pagefind"
	$(PY) scripts/check_site.py
	touch $@

.PHONY: site
site: setup $(SITE_CHECKED)

# Re-execute notebooks in place and store their outputs: `make execute` (all) or `make execute NB=notebooks/01_x.ipynb`;
# then regenerate notebooks/zh/ so that the Chinese edition shows the same outputs.
execute: setup
	for nb in $(or $(NB),$(NOTEBOOKS)); do \
	  $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=300 "$$nb" || exit 1; \
	done
	$(PY) scripts/make_zh.py  # the Chinese edition carries the same code and outputs

weights: setup
	$(PY) scripts/train_digits_cnn.py
	$(PY) scripts/train_tiny_transformer.py
	$(PY) scripts/train_tiny_llama.py

# Removes the environment and caches only: student/ holds learners' work and is never deleted here.
clean:
	rm -rf $(VENV) .pytest_cache $(REPORTS) _site build/site

# Student copies of the notebooks in student/ (git ignores it): solutions removed, outputs cleared and claim
# verdicts hidden (predict, then run), soft checks. A copy the learner changed is never overwritten.
student: setup
	$(PY) scripts/make_student.py notebooks student

.PHONY: student-lab reset presenter release-student doctor

# JupyterLab on the student copies only (made or refreshed first; edited copies are kept).
student-lab: student
	$(lab-settings)
	@echo "Starting JupyterLab on student/: the http://127.0.0.1:... URL it prints opens 00_start_here.ipynb (Ctrl+C to stop)."
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=student $(ROOT_FLAG) $(LAB_DIRS) $(LAB_ARGS) --LabApp.default_url=/lab/tree/00_start_here.ipynb

# A fresh student copy of one notebook (or several: NB="00 03", or NB=all); the learner's version moves to
# student/backups/ first. Where there is no make or .venv (Binder, JupyterHub, conda), the same from the course
# folder: python scripts/make_student.py notebooks student --reset 03
reset: setup
	@test -n "$(NB)" || { echo "usage: make reset NB=00   (NB=00_start_here, NB=\"00 03\" or NB=all)"; exit 2; }
	$(PY) scripts/make_student.py notebooks student --reset $(NB)

# Presenter copies for the projector in workshop/presenter/ (git ignores it): solutions kept, outputs
# cleared, verdicts hidden.
presenter: setup
	$(PY) scripts/make_student.py notebooks workshop/presenter --presenter

# Student copies that Colab and nbgitpuller can open, frozen with a workshop tag (the release commit's tree
# holds student/ only, so a pull never brings the solutions): `git tag workshop-2026-05` on the commit
# to teach, then `make release-student TAG=workshop-2026-05` commits the generated student/ on top of it
# (in a temporary worktree; the checkout is not touched) and tags that commit workshop-2026-05-student.
# Push both tags; see workshop/README.md for the links.
release-student: setup
	@test -n "$(TAG)" || { echo "usage: make release-student TAG=workshop-YYYY-MM (an existing tag)"; exit 2; }
	@git rev-parse -q --verify "refs/tags/$(TAG)^{commit}" >/dev/null || { echo "no tag $(TAG): git tag $(TAG) first"; exit 2; }
	@! git rev-parse -q --verify "refs/tags/$(TAG)-student" >/dev/null || { echo "$(TAG)-student exists already"; exit 2; }
	set -e; dir=$$(mktemp -d); trap 'git worktree remove --force "$$dir"' EXIT; \
	git worktree add -q --detach "$$dir" "$(TAG)"; \
	$(PY) "$$dir/scripts/make_student.py" "$$dir/notebooks" "$$dir/student" --pin-ref "$(TAG)"; \
	git -C "$$dir" rm -r -q --cached .; \
	git -C "$$dir" add -f student; \
	git -C "$$dir" commit -q -m "Student copies of $(TAG) (make release-student)"; \
	git tag "$(TAG)-student" "$$(git -C "$$dir" rev-parse HEAD)"
	@echo "Tagged $(TAG)-student. Publish with: git push origin $(TAG) $(TAG)-student"

# Is this machine ready for the course? Ends in READY (exit 0) or a numbered list of fixes (exit 1).
doctor: setup
	$(PY) -m hookviz.doctor --check

# Speed and memory checks; each script prints ratios measured in one run.
bench: setup
	for f in bench/bench_*.py; do $(PY) "$$f" || exit 1; done

# A class on one JupyterHub, rehearsed (workshop/jupyterhub/README.md): the hub and the single-user
# servers get their own venvs in .venv-hub/ (the course's .venv is only read), then N simulated learners
# log in, pull the student copies with nbgitpuller and run notebooks 06 and 00. `make test-hub`: 2 learners.
.PHONY: hub-env hub-rehearsal test-hub
hub-env: setup
	$(PY) bench/bench_hub.py --install

hub-rehearsal: setup
	$(PY) bench/bench_hub.py --learners $(or $(LEARNERS),10)

test-hub: setup
	HOOKVIZ_STAGE=hub HOOKVIZ_RUN_REPORT=$(REPORTS)/hub.json $(PY) -m pytest -q -m hub tests/test_hub.py

# The Chinese edition: regenerate notebooks/zh/ from the English notebooks and i18n/zh/ (no network).
# Untranslated or outdated cells are shown in English under a marker; list them with
# `$(PY) scripts/make_zh.py --stale`.
.PHONY: zh
zh: setup
	$(PY) scripts/make_zh.py

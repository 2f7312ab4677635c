# Two commands on a fresh machine: `make run` (the whole pipeline on the default data)
# and `make test`. Both create or reuse the virtual environment in .venv.
PYTHON ?= python3.11
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.srdiv-installed
CORES  ?= 2
# Training jobs declare gpu=1: with GPUs, that many run at once; on a CPU-only machine the cores limit them.
NGPU   := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
GPUS   ?= $(if $(filter-out 0,$(NGPU)),$(NGPU),$(CORES))
SMK     = $(BIN)/snakemake --cores $(CORES) --resources gpu=$(GPUS)
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install run run-all run-cpu run-ablations smoke test dvc-yaml trec

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[pipeline,test]"
	touch $(STAMP)

install: $(STAMP)

# Without a GPU, `make run` runs the CPU cut (config/cpu.yaml, ~2 hours on 2 cores) instead of the
# full default setting (more than a day on 2 cores); `make run-all` forces the full setting.
CPU_CUT    := --configfile params.yaml config/cpu.yaml
RUN_CONFIG := $(if $(filter-out 0,$(NGPU)),,$(CPU_CUT))

## the main job on the default collection (wordnet-div): every model with a GPU, the CPU cut without
run: $(STAMP)
	$(SMK) $(RUN_CONFIG)

## every row of params.yaml, 5 folds, whatever the machine
run-all: $(STAMP)
	$(SMK)

## the 2-hour cut for a 2-core CPU behind the committed results/wordnet-div (config/cpu.yaml)
run-cpu: $(STAMP)
	$(SMK) $(CPU_CUT)

## the ablation study on a 2-core CPU (config/cpu-ablations.yaml): DSSA, DESA and DALETOR variants, 5 folds
run-ablations: $(STAMP)
	$(SMK) --configfile params.yaml config/cpu-ablations.yaml

## the whole DAG on ~12 queries, 2 folds, one epoch, a few models (minutes)
smoke: $(STAMP)
	$(SMK) --configfile params.yaml config/smoke.yaml

## the TREC Web Track 2009-2012 (needs the DSSA release or your ClueWeb09 text: see README)
trec: $(STAMP)
	$(SMK) --configfile params.yaml config/trec-web.yaml

test: $(STAMP)
	$(BIN)/pytest -q

## regenerate dvc.yaml and pipelines/smoke/dvc.yaml from the Snakefile
dvc-yaml: $(STAMP)
	$(BIN)/srdiv dvc-yaml --config params.yaml --out dvc.yaml
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/smoke.yaml --wdir ../.. --out pipelines/smoke/dvc.yaml

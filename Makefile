# Two commands on a fresh machine: `make run` (the whole pipeline on the default data)
# and `make test`. Both create or reuse the virtual environment in .venv.
PYTHON ?= python3.11
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.srdiv-installed
CORES  ?= 2
# gpu=N counts GPUs: the train jobs of rows that run on CUDA take one of each GPU's gpu_jobs slots
# (params.yaml); on a CPU-only machine the cores limit them.
NGPU   := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
GPUS   ?= $(if $(filter-out 0,$(NGPU)),$(NGPU),$(CORES))
# --rerun-incomplete: jobs that a hard kill (power loss, kill -9) left half-done are run again, not refused.
SMK     = $(BIN)/snakemake --cores $(CORES) --resources gpu=$(GPUS) --rerun-incomplete
# Your own overlays after a target's (make smoke CONFIG=my.yaml, or CONFIG="a.yaml b.yaml"): docs/overlays.md.
CONFIG ?=
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install slurm-smoke dvc-status dvc-remote run study smoke planted unlock test test-slow lint dvc-yaml trec dvc-repro dvc-smoke

# constraints.txt pins every package to the versions DESA Table 3's CPU jobs ran under (pipelines/ablations-desa).
$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[pipeline,test,pyterrier]"
	touch $(STAMP)

install: $(STAMP)

## the main job on the default collection (wordnet-div): the main table's rows, each at its full budget
## (= snakemake --cores N --resources gpu=N --configfile params.yaml config/main.yaml)
run: $(STAMP)
	$(SMK) --configfile params.yaml config/main.yaml $(CONFIG)

## one study or setting, config/<NAME>.yaml over params.yaml (config/README.md lists them and their results):
## ablations, ablations-dssa, ablations-daletor, ablations-desa (many CPU-hours without a GPU), sweeps, oracle,
## all, debian-facets (the main table's rows on the second open collection, so config/main.yaml first)
OVERLAYS_debian-facets = config/main.yaml
study: $(STAMP)
	@test -n "$(NAME)" -a -f "config/$(NAME).yaml" || { echo "make study NAME=<an overlay of config/, e.g. ablations-desa>"; exit 2; }
	$(SMK) --configfile params.yaml $(OVERLAYS_$(NAME)) config/$(NAME).yaml $(CONFIG)

## the whole DAG on ~12 queries, 2 folds, one epoch, a few models (minutes)
smoke: $(STAMP)
	$(SMK) --configfile params.yaml config/smoke.yaml $(CONFIG)

## the smoke DAG through workflow/profiles/slurm on a one-node SLURM cluster this machine starts and stops
## (as root; Debian's slurmctld slurmd slurm-client munge), its results compared byte for byte with make smoke's
slurm-smoke: smoke
	bash workflow/scripts/slurm_smoke.sh

## the learning check: every trainable row (and yours: CONFIG=my-row.yaml) on the planted collection, then
## each row's share of the gap between the initial run and the ideal re-ranking, pass or fail (docs/planted.md)
planted: $(STAMP)
	$(SMK) results/planted/metrics.parquet --configfile params.yaml config/planted.yaml $(CONFIG)
	$(BIN)/srdiv learning-check --metrics results/planted/metrics.parquet --collection work/planted/collection

## after a hard kill (power loss, kill -9): release the lock Snakemake left, then `make run` resumes
unlock: $(STAMP)
	$(SMK) --unlock --configfile params.yaml config/main.yaml $(CONFIG)

## the TREC Web Track 2009-2012 (needs the DSSA release or your ClueWeb09 text: see README)
trec: $(STAMP)
	$(SMK) --configfile params.yaml config/trec-web.yaml $(CONFIG)

## the test suite less the end-to-end tests marked slow, over one pytest-xdist worker per core (TEST_WORKERS=4 for
## four, TEST_WORKERS=0 in this process); a module's tests stay in one worker, in order, with its fixtures
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

## ruff (its rules in pyproject.toml) and mypy on the package
lint: $(STAMP)
	$(BIN)/ruff check src
	$(BIN)/mypy

## the end-to-end tests marked slow: the smoke DAG through Snakemake and DVC, a training killed and resumed
## through the CLI, the committed collections rebuilt from their sources, the learning check (CI runs both
## targets); over the xdist workers as make test, and beside them, in one more process, the SLURM tests (they
## start a cluster on fixed ports and mostly wait on it; their output follows the others'); either part failing
## fails the target, and each prints its slowest tests
test-slow: $(STAMP)
	log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	$(BIN)/pytest -q -m "slow and slurm" --durations=3 > "$$log" 2>&1 & s=$$!; \
	$(BIN)/pytest -q -m "slow and not slurm" -n $(TEST_WORKERS) --dist loadfile --durations=12; a=$$?; \
	wait $$s; b=$$?; echo "--- the SLURM tests (run beside the others):"; cat "$$log"; \
	[ $$a -eq 0 ] && [ $$b -eq 0 ]

## the same DAGs through DVC, with the venv's srdiv on the PATH: the main table (dvc.yaml), a study or
## another setting (make dvc-repro PIPELINE=pipelines/<name>/dvc.yaml: ablations, ablations-dssa, ablations-daletor, sweeps,
## ablations-desa, all, debian-facets, oracle, trec-web), the smoke setting
PIPELINE ?= dvc.yaml
dvc-repro: $(STAMP)
	$(BIN)/dvc repro $(PIPELINE)

## the smoke setting through DVC, a check of the DAG: like its results, its lock is not kept (DVC refuses a
## git-ignored lock, so the target removes pipelines/smoke/dvc.lock, whatever DVC's closing hint to `git add`
## it says); DVC's run cache restores the stages that did not change on the next run
dvc-smoke: $(STAMP)
	$(BIN)/dvc repro pipelines/smoke/dvc.yaml; status=$$?; rm -f pipelines/smoke/dvc.lock; exit $$status

## which stages of one pipeline are stale and why, in a few lines (make dvc-status PIPELINE=pipelines/<name>/dvc.yaml)
dvc-status: $(STAMP)
	$(BIN)/python workflow/scripts/dvc_status.py $(PIPELINE)

## a directory on a shared file system as the default DVC remote (make dvc-remote DIR=/shared/srdiv-cache),
## written to .dvc/config for everyone who clones (LOCAL=1: .dvc/config.local, this clone only); then
## `dvc push PIPELINE` shares a pipeline's outputs and `dvc pull PIPELINE` brings them (docs/running.md)
dvc-remote: $(STAMP)
	@test -n "$(DIR)" || { echo "make dvc-remote DIR=/path/on/a/shared/file/system"; exit 2; }
	mkdir -p "$(DIR)"
	$(BIN)/dvc remote add $(if $(LOCAL),--local )--default --force shared "$(abspath $(DIR))"

## regenerate dvc.yaml (main table) and pipelines/<setting>/dvc.yaml from the Snakefile
dvc-yaml: $(STAMP)
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/main.yaml --study config/ablations-dssa.yaml \
	  --study config/ablations.yaml --study config/ablations-daletor.yaml --study config/sweeps.yaml --study config/ablations-desa.yaml \
	  --study config/all.yaml --out dvc.yaml
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/smoke.yaml --wdir ../.. --out pipelines/smoke/dvc.yaml
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/main.yaml --config config/debian-facets.yaml --wdir ../.. \
	  --out pipelines/debian-facets/dvc.yaml
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/trec-web.yaml --wdir ../.. --out pipelines/trec-web/dvc.yaml
	$(BIN)/srdiv dvc-yaml --config params.yaml --config config/oracle.yaml --wdir ../.. --out pipelines/oracle/dvc.yaml

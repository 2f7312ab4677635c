# srdiv: the whole pipeline as one Snakemake DAG.
#
#   make run      (= snakemake --cores N --resources gpu=N --configfile params.yaml config/main.yaml)   # the main table
#   snakemake --cores 2 --configfile params.yaml config/smoke.yaml         # smoke: 12 queries, 2 folds
#   snakemake --cores 8 --configfile params.yaml config/all.yaml           # every row (results/wordnet-div-all)
#   snakemake --cores 8 --configfile params.yaml config/trec-web.yaml      # TREC Web Track 2009-2012
#
# params.yaml is the configuration of both Snakemake and every srdiv command;
# rules only call srdiv commands. dvc.yaml is generated from this DAG (make dvc-yaml).
# With no --configfile that names a setting (a file other than params.yaml), the DAG is the main table:
# params.yaml with config/main.yaml over it, written to results/wordnet-div/ as `make run` does; a study,
# another dataset or every row runs only when its file is named. The train jobs of rows that run on a GPU
# (`train.device`, `srdiv.train.device.row_device`) take one `gpu` slot each, the others none; `--resources
# gpu=N` counts GPUs, each with `gpu_jobs` slots (params.yaml).

from pathlib import Path

MAIN_TABLE = all(Path(f).resolve() == Path("params.yaml").resolve() for f in workflow.config_settings.configfiles)


configfile: "params.yaml"


if MAIN_TABLE:

    configfile: "config/main.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/collection.smk"
include: "workflow/rules/text.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/sampling.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/report.smk"


# The per-fold metrics are targets too: results/ is committed, so on a fresh clone the report exists while
# work/ does not, and without them Snakemake would find nothing to do; with them every stage runs, and
# the gather and report are redone from what this run made.
rule all:
    input:
        f"{RESULTS}/README.md",
        expand(f"{MODELS}/{{model}}/fold{{fold}}/metrics.parquet", model=ROWS, fold=FOLDS),

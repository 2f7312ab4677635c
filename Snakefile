# srdiv: the whole pipeline as one Snakemake DAG.
#
#   snakemake --cores 8 --resources gpu=1                                  # default: wordnet-div, all models
#   snakemake --cores 2 --configfile params.yaml config/smoke.yaml         # smoke: 12 queries, 2 folds
#   snakemake --cores 8 --configfile params.yaml config/trec-web.yaml      # TREC Web Track 2009-2012
#
# params.yaml is the configuration of both Snakemake and every srdiv command;
# rules only call srdiv commands. dvc.yaml is generated from this DAG (make dvc-yaml).

configfile: "params.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/collection.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/pseudo_docs.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/samples.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/rank.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


# The per-fold metrics are targets too: results/ is committed, so on a fresh clone the report exists while
# work/ does not, and without them Snakemake would find nothing to do; with them every stage runs, and
# the gather and report are redone from what this run made.
rule all:
    input:
        f"{RESULTS}/README.md",
        expand(f"{MODELS}/{{model}}/fold{{fold}}/metrics.parquet", model=ROWS, fold=FOLDS),

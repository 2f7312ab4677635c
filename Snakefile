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


rule all:
    input:
        f"{RESULTS}/README.md",

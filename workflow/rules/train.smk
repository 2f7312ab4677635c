# train: one job per (model row, fold): search the row's space on the validation fold (study.db), train, save the chosen model, and rank its
# trial's test queries with it (a TREC run file) in the same process, the bundle loaded once.


# Before the first job of a run (not a dry run, nor a run with nothing to do), every row it trains is checked
# against its model and objective (srdiv check-rows, a process of its own: the DAG is built without importing
# them and torch). A mistake is one line naming the params file and the key, and no job starts. Not a job of the
# DAG: Snakemake would rerun every train job after a job they all read, or, reading it as `ancient`, would not
# see that an edited row's own train jobs must run (the check's rerun hides their reasons).
onstart:
    shell("srdiv check-rows " + " ".join(f"--row {row}" for row in required_rows()) + f" {PARAMS}")


def train_inputs(wildcards):
    inputs = {"bundle": f"{WORK}/bundle/{representation(wildcards.model)}.npz", "collection": COLLECTION}
    if trainable(wildcards.model):
        inputs["samples"] = samples_file(wildcards.model, wildcards.fold)
    if prior(wildcards.model):
        inputs["prior"] = f"{model_dir(prior(wildcards.model), wildcards.fold)}/model.pt"
    if component_files(wildcards.model):     # the `import:` files of its model and objective: only its rows
        inputs["components"] = component_files(wildcards.model)
    return inputs


def train_sections(wildcards):
    rows = [wildcards.model] + ([prior(wildcards.model)] if prior(wildcards.model) else [])
    return ["seed", "train", "search", "samples"] + [f"models.{r}" for row in rows for r in lineage(config, row)]


def optional_args(wildcards, input):
    args = f"--samples {input.samples}" if "samples" in input.keys() else ""
    if "prior" in input.keys():
        args += f" --prior {input.prior}"
    if STUDY:               # a row the main run trained with the same settings and inputs is copied from it
        args += f" --reuse {MAIN_MODELS}/{wildcards.model}/fold{wildcards.fold}"
    return args


rule train:
    input:
        unpack(train_inputs),
    output:
        model=f"{MODELS}/{{model}}/fold{{fold}}/model.pt",
        hparams=f"{MODELS}/{{model}}/fold{{fold}}/hparams.json",
        curve=f"{MODELS}/{{model}}/fold{{fold}}/curve.parquet",
        timings=f"{MODELS}/{{model}}/fold{{fold}}/timings.json",
        study=f"{MODELS}/{{model}}/fold{{fold}}/study.db",
        run=f"{MODELS}/{{model}}/fold{{fold}}/run.txt",
        rank_timings=f"{MODELS}/{{model}}/fold{{fold}}/rank.json",
    params:
        sections=lambda wildcards: tracked(train_sections(wildcards)),
        optional=optional_args,
        out=lambda wildcards: model_dir(wildcards.model, wildcards.fold),
    threads: train_threads
    priority: train_priority
    resources:
        gpu=gpu_share,
    log:
        f"{MODEL_LOGS}/train/{{model}}-fold{{fold}}.log",
    benchmark:
        f"{MODEL_BENCH}/train/{{model}}-fold{{fold}}.tsv"
    shell:
        "srdiv train --model {wildcards.model} --fold {wildcards.fold} --bundle {input.bundle}"
        " --collection {input.collection} {params.optional} {PARAMS} --no-progress --threads {threads} --rank --out {params.out} 2> {log}"

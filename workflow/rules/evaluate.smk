# evaluate: official per-query metrics of each test run, gathered into results/<dataset>/metrics.parquet.


rule evaluate:
    input:
        run=f"{MODELS}/{{model}}/fold{{fold}}/run.txt",
        collection=COLLECTION,
    output:
        f"{MODELS}/{{model}}/fold{{fold}}/metrics.parquet",
    log:
        f"{MODEL_LOGS}/evaluate/{{model}}-fold{{fold}}.log",
    shell:
        "srdiv evaluate --collection {input.collection} --run {input.run} --fold {wildcards.fold}"
        " --out {output} > {log} 2>&1"


rule gather:
    input:
        expand(f"{MODELS}/{{model}}/fold{{fold}}/metrics.parquet", model=ROWS, fold=FOLDS),
    output:
        f"{RESULTS}/metrics.parquet",
    params:
        sections=["models"],
    log:
        f"{MODEL_LOGS}/gather.log",
    shell:
        "srdiv gather --models {MODELS} {PARAMS} --out {output} 2> {log}"

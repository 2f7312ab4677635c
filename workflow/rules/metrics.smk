# metrics: official per-query metrics of each test run (and of each report.reference_runs file),
# gathered into results/<dataset>/metrics.parquet.


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


rule evaluate_reference:
    input:
        run=lambda w: REFERENCE_RUNS[w.reference],
        collection=COLLECTION,
    output:
        f"{REFERENCES}/{{reference}}/metrics.parquet",
    log:
        f"{LOGS}/evaluate/reference-{{reference}}.log",
    shell:
        "srdiv evaluate --collection {input.collection} --run {input.run} --out {output} > {log} 2>&1"


rule gather:
    input:
        expand(f"{MODELS}/{{model}}/fold{{fold}}/metrics.parquet", model=ROWS, fold=FOLDS),
        expand(f"{REFERENCES}/{{reference}}/metrics.parquet", reference=list(REFERENCE_RUNS)),
        collection=COLLECTION,
    output:
        f"{RESULTS}/metrics.parquet",
    params:
        sections=tracked(["models", "report.reference_runs"]),
    log:
        f"{MODEL_LOGS}/gather.log",
    shell:
        "srdiv gather --models {MODELS} {PARAMS} --references {REFERENCES} --collection {input.collection}"
        " --out {output} 2> {log}"

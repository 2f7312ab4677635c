# report: paper-style tables (Markdown, LaTeX, HTML), plots and the results README.


rule report:
    input:
        metrics=f"{RESULTS}/metrics.parquet",
        runs=expand(f"{MODELS}/{{model}}/fold{{fold}}/run.txt", model=ROWS, fold=FOLDS),
        reference_runs=list(REFERENCE_RUNS.values()),
        collection=COLLECTION,
    output:
        readme=f"{RESULTS}/README.md",
        main=f"{RESULTS}/tables/main.md",
    params:
        sections=tracked(["report", "models"]),
    log:
        f"{MODEL_LOGS}/report.log",
    shell:
        "srdiv report --metrics {input.metrics} {PARAMS} --out {RESULTS} --models-dir {MODELS}"
        " --benchmarks-dir {MODEL_BENCH} --collection {input.collection} 2> {log}"

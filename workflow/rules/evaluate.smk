# evaluate: every (row, fold)'s per-query official metrics gathered into results/<dataset>/metrics.parquet.


rule gather:
    input:
        expand(f"{WORK}/models/{{model}}/fold{{fold}}/metrics.parquet", model=ROWS, fold=FOLDS),
    output:
        f"{RESULTS}/metrics.parquet",
    params:
        sections=["models"],
    log:
        f"{LOGS}/gather.log",
    shell:
        "srdiv gather --models {WORK}/models {PARAMS} --out {output} 2> {log}"

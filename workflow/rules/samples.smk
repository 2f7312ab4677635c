# samples: DSSA list-pairwise samples (Algorithm 1) and PAMM rankings of each trial's training queries.


rule samples:
    input:
        bundle=f"{WORK}/bundle/{DEFAULT_REPR}.npz",
        collection=COLLECTION,
    output:
        f"{WORK}/samples/fold{{fold}}/samples.npz",
    params:
        sections=["seed", "samples", "train"],
        out=f"{WORK}/samples/fold{{fold}}",
    log:
        f"{LOGS}/samples-fold{{fold}}.log",
    benchmark:
        f"{BENCH}/samples/fold{{fold}}.tsv"
    shell:
        "srdiv samples --bundle {input.bundle} --collection {input.collection} --fold {wildcards.fold}"
        " {PARAMS} --out {params.out} 2> {log}"

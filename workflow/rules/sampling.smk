# sampling: DSSA list-pairwise samples (Algorithm 1) and PAMM rankings of each trial's training queries.
# Rows share samples/fold<k>; a row with its own `samples` settings (e.g. DSSA Figure 7's number of
# permutations) gets samples/<key>/fold<k> (srdiv.sampling.samples.samples_key).


def sampling_fold(wildcards):
    return int(wildcards.sampling.rsplit("fold", 1)[1])


def sampling_rows(wildcards):
    """The row whose ``samples`` settings a keyed sampling uses (the first with that key; rows with one
    key share it), or none."""
    key = wildcards.sampling.rpartition("/")[0]
    return [next(r for r in required_rows() if samples_key(config, r) == key)] if key else []


rule samples:
    input:
        bundle=f"{WORK}/bundle/{DEFAULT_REPR}.npz",
        collection=COLLECTION,
    output:
        f"{WORK}/samples/{{sampling}}/samples.npz",
    params:
        sections=lambda wildcards: tracked(["seed", "samples", "train"]
                                           + [f"models.{r}.samples" for row in sampling_rows(wildcards)
                                              for r in lineage(config, row)]),
        out=f"{WORK}/samples/{{sampling}}",
        fold=sampling_fold,
        row=lambda wildcards: " ".join(f"--row {r}" for r in sampling_rows(wildcards)),
    log:
        f"{LOGS}/samples/{{sampling}}.log",
    benchmark:
        f"{BENCH}/samples/{{sampling}}.tsv"
    shell:
        "srdiv samples --bundle {input.bundle} --collection {input.collection} --fold {params.fold} {params.row}"
        " {PARAMS} --out {params.out} 2> {log}"

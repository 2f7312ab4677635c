# features: 18 relevance features per (query or suggestion, candidate), pairwise diversity
# features, and the training-ready bundle per representation; or the DSSA release's vectors and
# relevance features (srdiv import-dssa), for a collection that has no text.

DIV_VECTORS = config["features"]["diversity_vectors"]   # params.yaml: features.diversity_vectors

if FEATURES_FROM == "text":

    rule features_relevance:
        input:
            collection=COLLECTION,
            docs=DOCS_INPUT,
        output:
            f"{WORK}/features/relevance.parquet",
        params:
            sections=tracked(["features"]),
        log:
            f"{LOGS}/features_relevance.log",
        benchmark:
            f"{BENCH}/features_relevance.tsv"
        shell:
            "srdiv features relevance --collection {input.collection} {DOCS} {PARAMS} --out {output} 2> {log}"

else:

    rule import_dssa:
        input:
            collection=COLLECTION,
            release=DS["dssa_release"],
        output:
            embed=directory(f"{WORK}/embed"),
            pseudo_docs=directory(f"{WORK}/pseudo_docs"),
            relevance=f"{WORK}/features/relevance.parquet",
        params:
            sections=tracked(["features"]),
        log:
            f"{LOGS}/import_dssa.log",
        shell:
            "srdiv import-dssa --collection {input.collection} --release {input.release} {PARAMS}"
            " --embed-out {output.embed}/lda.parquet --pseudo-docs-out {output.pseudo_docs}/lda.parquet"
            " --relevance-out {output.relevance} 2> {log}"


rule features_diversity:
    input:
        collection=COLLECTION,
        docs=DOCS_INPUT,
        embed=f"{WORK}/embed",
    output:
        f"{WORK}/features/diversity.parquet",
    params:
        sections=tracked(["features"]),
    log:
        f"{LOGS}/features_diversity.log",
    benchmark:
        f"{BENCH}/features_diversity.tsv"
    shell:
        "srdiv features diversity --collection {input.collection} {DOCS} --vectors {input.embed}/"
        + DIV_VECTORS + ".parquet {PARAMS} --out {output} 2> {log}"


rule bundle:
    input:
        collection=COLLECTION,
        embed=f"{WORK}/embed",
        pseudo_docs=f"{WORK}/pseudo_docs",
        relevance=f"{WORK}/features/relevance.parquet",
        diversity=f"{WORK}/features/diversity.parquet",
    output:
        f"{WORK}/bundle/{{repr}}.npz",
    params:
        sections=tracked(["features"]),
    log:
        f"{LOGS}/bundle-{{repr}}.log",
    shell:
        "srdiv bundle --collection {input.collection} --doc-vectors {input.embed}/{wildcards.repr}.parquet"
        " --pseudo-vectors {input.pseudo_docs}/{wildcards.repr}.parquet --relevance {input.relevance}"
        " --diversity {input.diversity} {PARAMS} --out {output} 2> {log}"

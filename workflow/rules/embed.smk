# embed: doc2vec (PV-DBOW) and LDA document vectors; or the DSSA release's vectors and features.

if FEATURES_FROM == "text":

    rule embed:
        input:
            collection=COLLECTION,
            docs=DOCS_INPUT,
        output:
            directory(f"{WORK}/embed"),
        params:
            sections=tracked(["seed", "embed"]),
        threads: 2
        log:
            f"{LOGS}/embed.log",
        benchmark:
            f"{BENCH}/embed.tsv"
        shell:
            "srdiv embed --collection {input.collection} {DOCS} {PARAMS} --out {output} 2> {log}"

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

# text: doc2vec (PV-DBOW), LDA and SVD document vectors (srdiv embed), and the query and suggestion
# vectors inferred from their top-Z BM25 documents (srdiv pseudo-docs, DSSA/DESA). A collection with
# the DSSA release's features reads both from the release (features.smk: import_dssa).

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

    rule pseudo_docs:
        input:
            collection=COLLECTION,
            docs=DOCS_INPUT,
            embed=f"{WORK}/embed",
        output:
            directory(f"{WORK}/pseudo_docs"),
        params:
            sections=tracked(["seed", "pseudo_docs", "features"]),
        threads: stage_params(config, "pseudo_docs")["workers"]   # its doc2vec inference processes
        log:
            f"{LOGS}/pseudo_docs.log",
        benchmark:
            f"{BENCH}/pseudo_docs.tsv"
        shell:
            "srdiv pseudo-docs --collection {input.collection} {DOCS} --embed-dir {input.embed} {PARAMS}"
            " --out {output} 2> {log}"

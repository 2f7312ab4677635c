# pseudo_docs: query and suggestion vectors inferred from their top-Z BM25 documents (DSSA/DESA).

if FEATURES_FROM == "text":

    rule pseudo_docs:
        input:
            collection=COLLECTION,
            docs=DOCS_INPUT,
            embed=f"{WORK}/embed",
        output:
            directory(f"{WORK}/pseudo_docs"),
        params:
            sections=tracked(["seed", "pseudo_docs", "features"]),
        threads: 2
        log:
            f"{LOGS}/pseudo_docs.log",
        benchmark:
            f"{BENCH}/pseudo_docs.tsv"
        shell:
            "srdiv pseudo-docs --collection {input.collection} {DOCS} --embed-dir {input.embed} {PARAMS}"
            " --out {output} 2> {log}"

# collection: the dataset in the common schema (committed for wordnet-div; built otherwise).

BUILD = DS.get("build") or {}

if BUILD.get("kind") == "trec-web":

    rule collection:
        input:
            BUILD["source"],
        output:
            directory(COLLECTION),
        params:
            sections=tracked([f"datasets.{DATASET}"]),
        log:
            f"{LOGS}/collection.log",
        shell:
            "srdiv collection trec-web --source {input} --out {output} 2> {log}"

elif BUILD.get("kind") == "subset":

    rule collection:
        input:
            BUILD["source"],
        output:
            directory(COLLECTION),
        params:
            sections=tracked(["seed", f"datasets.{DATASET}"]),
        log:
            f"{LOGS}/collection.log",
        shell:
            "srdiv collection subset --source {input} --out {output} --queries {BUILD[queries]}"
            " --folds {BUILD[folds]} --extra-docs {BUILD[extra_docs]} --seed {config[seed]} 2> {log}"

elif BUILD.get("kind") == "with-suggestions":

    rule collection:
        input:
            source=BUILD["source"],
            suggestions=BUILD["suggestions"],
        output:
            directory(COLLECTION),
        params:
            sections=tracked([f"datasets.{DATASET}"]),
        log:
            f"{LOGS}/collection.log",
        shell:
            "srdiv collection with-suggestions --source {input.source} --suggestions {input.suggestions}"
            " --out {output} 2> {log}"

elif BUILD.get("kind") == "planted":

    rule collection:
        output:
            directory(COLLECTION),
        params:
            sections=tracked(["seed", f"datasets.{DATASET}"]),
        log:
            f"{LOGS}/collection.log",
        shell:
            "srdiv collection planted --out {output} --queries {BUILD[queries]} --subtopics {BUILD[subtopics]}"
            " --candidates {BUILD[candidates]} --noise {BUILD[noise]} --folds {BUILD[folds]} --seed {config[seed]}"
            " 2> {log}"

# rank: the trained model of each (row, fold) re-ranks its trial's test queries: a TREC run file.


rule rank:
    input:
        model=f"{MODELS}/{{model}}/fold{{fold}}/model.pt",
        bundle=lambda wildcards: f"{WORK}/bundle/{representation(wildcards.model)}.npz",
        collection=COLLECTION,
    output:
        run=f"{MODELS}/{{model}}/fold{{fold}}/run.txt",
        timings=f"{MODELS}/{{model}}/fold{{fold}}/rank.json",
    params:
        sections=tracked(["train"]),
        out=lambda wildcards: model_dir(wildcards.model, wildcards.fold),
    threads: 1
    resources:
        gpu=gpu_share,
    log:
        f"{MODEL_LOGS}/rank/{{model}}-fold{{fold}}.log",
    benchmark:
        f"{MODEL_BENCH}/rank/{{model}}-fold{{fold}}.tsv"
    shell:
        "srdiv rank --model-dir {input.model} --fold {wildcards.fold} --bundle {input.bundle}"
        " --collection {input.collection} --threads {threads} --out {params.out} 2> {log}"

"""Measure the search's pruners on a built setting: train rows with each pruner (and none) and compare.

For each row, fold and pruner, ``srdiv train`` runs with an overlay that sets ``search`` (the pruner, and
``startup`` so high that nothing is pruned for ``none``) and ``train.epochs``; the script prints one TSV
line per job: the chosen trial's validation score, the chosen model's mean alpha-nDCG@20 on the fold's test
queries, the epochs all trials trained, trials pruned, train seconds. Needs the setting's bundle and samples (``snakemake ... config/smoke.yaml`` first)::

    python benchmarks/measure_search.py --setting config/smoke.yaml --dataset wordnet-div-smoke \\
        --rows ListMLE DSSA --folds 1 2 --trials 8 --epochs 10 --out work/measure-search > measured.tsv

``--estimate measured.tsv`` estimates instead the main table's training time under the search (an
estimate, not a run): each row's seconds per epoch on the full collection (``docs/job-times.tsv``: job
seconds over the epochs its grid trained, ``docs/job-points.tsv``) times the epochs its search trains:
``--trials`` trials of the old grid's median epochs per point, scaled by the share of epochs a pruner
kept in ``measured.tsv`` (its epochs over those of ``none``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from srdiv.collection.schema import load_collection  # noqa: E402
from srdiv.metrics.evaluate import evaluate_run  # noqa: E402
from srdiv.metrics.names import HEADLINE  # noqa: E402
from srdiv.metrics.runs import load_run  # noqa: E402
from srdiv.params import load_params  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", default="config/smoke.yaml")
    parser.add_argument("--dataset", default="wordnet-div-smoke")
    parser.add_argument("--rows", nargs="+", default=["ListMLE", "DSSA"])
    parser.add_argument("--folds", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--pruners", nargs="+", default=["none", "median", "halving"])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--estimate", type=Path, help="A TSV this script printed: estimate the main table instead.")
    args = parser.parse_args()
    if args.estimate:
        estimate(args.estimate, args.trials)
        return
    params = load_params([ROOT / "params.yaml", ROOT / args.setting])
    work = ROOT / "work" / args.dataset
    qrels = load_collection(work / "collection").qrels
    print("row\tfold\tpruner\tvalid\ttest\tepochs\tpruned\ttrials\ttrain_s", flush=True)
    for pruner in args.pruners:
        overlay = args.out / f"{pruner}.yaml"
        overlay.parent.mkdir(parents=True, exist_ok=True)
        search = {"trials": args.trials, "pruner": "median" if pruner == "none" else pruner}
        if pruner == "none":
            search["startup"] = args.trials + 1          # never enough completed trials to prune
        overlay.write_text(yaml.safe_dump({"search": search, "train": {"epochs": args.epochs}}))
        for row in args.rows:
            representation = params["models"][row].get("representation") or params["datasets"][args.dataset]["representation"]
            for fold in args.folds:
                out = args.out / pruner / row / f"fold{fold}"
                subprocess.run([str(Path(sys.executable).parent / "srdiv"), "train", "--model", row, "--fold", str(fold),
                                "--bundle", str(work / "bundle" / f"{representation}.npz"),
                                "--collection", str(work / "collection"),
                                "--samples", str(work / "samples" / f"fold{fold}" / "samples.npz"),
                                "--params", str(ROOT / "params.yaml"), "--params", str(ROOT / args.setting),
                                "--params", str(overlay), "--no-progress", "--threads", str(args.threads),
                                "--rank", "--out", str(out)], check=True, stderr=subprocess.DEVNULL)
                hparams = json.loads((out / "hparams.json").read_text())
                timings = json.loads((out / "timings.json").read_text())
                epochs = sum(t["epochs"] for t in hparams["grid"])
                run = load_run(out / "run.txt")
                scores = evaluate_run(run, qrels[qrels["qid"].isin(run["qid"])], [HEADLINE])
                test = scores.loc[scores["measure"] == HEADLINE, "value"].mean()
                print(f"{row}\t{fold}\t{pruner}\t{hparams['valid']:.4f}\t{test:.4f}\t{epochs}\t{hparams['search']['pruned']}\t"
                      f"{hparams['search']['trials']}\t{timings['train_seconds']:.1f}", flush=True)


def estimate(measured: Path, trials: int) -> None:
    """Print, per pruner, each row's estimated train seconds per fold and the main table's sum (see above)."""
    import pandas as pd

    runs = pd.read_csv(measured, sep="\t")
    kept = runs.groupby("pruner")["epochs"].sum() / runs[runs["pruner"] == "none"]["epochs"].sum()
    times = pd.read_csv(ROOT / "docs/job-times.tsv", sep="\t", comment="#")
    times = times[(times["rule"] == "train") & (times["device"] == "cpu")].set_index("row")["seconds"]
    points = pd.read_csv(ROOT / "docs/job-points.tsv", sep="\t", comment="#")
    epochs = points["epochs"].astype(str).str.split(",").map(lambda e: [int(x) for x in e])
    points = points.assign(total=epochs.map(sum), per_point=epochs.map(lambda e: sum(e) / len(e)))
    rows = points.groupby("row")[["total", "per_point"]].median()
    rows["s_per_epoch"] = times.reindex(rows.index) / rows["total"]
    untrained = times.drop(rows.index, errors="ignore").sum()          # rows without training: unchanged
    print("pruner\tshare of epochs kept\t" + "\t".join(rows.index) + "\ttrain jobs, 5 folds (s)")
    for pruner, share in kept.items():
        per_fold = rows["s_per_epoch"] * rows["per_point"] * trials * share
        total = 5 * (per_fold.sum() + untrained)
        print(f"{pruner}\t{share:.2f}\t" + "\t".join(f"{s:.0f}" for s in per_fold) + f"\t{total:.0f}")
    print(f"old grids\t1.00\t" + "\t".join(f"{s:.0f}" for s in times.reindex(rows.index)) +
          f"\t{5 * (times.reindex(rows.index).sum() + untrained):.0f}")


if __name__ == "__main__":
    main()

"""Measure the search's pruners on a built setting: train rows with each pruner (and none) and compare.

For each row, fold and pruner, ``srdiv train`` runs with an overlay that sets ``search`` (the pruner, and
``startup`` so high that nothing is pruned for ``none``) and ``train.epochs``; the script prints one TSV
line per job: the chosen trial's validation score, the epochs all trials trained, trials pruned, train
seconds. Needs the setting's bundle and samples (``snakemake ... config/smoke.yaml`` first)::

    python scripts/measure_search.py --setting config/smoke.yaml --dataset wordnet-div-smoke \\
        --rows ListMLE DSSA --folds 1 2 --trials 8 --epochs 10 --out /tmp/measure-search
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
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    params = load_params([ROOT / "params.yaml", ROOT / args.setting])
    work = ROOT / "work" / args.dataset
    print("row\tfold\tpruner\tvalid\tepochs\tpruned\ttrials\ttrain_s", flush=True)
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
                subprocess.run([sys.executable, "-m", "srdiv.launch", "train", "--model", row, "--fold", str(fold),
                                "--bundle", str(work / "bundle" / f"{representation}.npz"),
                                "--collection", str(work / "collection"),
                                "--samples", str(work / "samples" / f"fold{fold}" / "samples.npz"),
                                "--params", str(ROOT / "params.yaml"), "--params", str(ROOT / args.setting),
                                "--params", str(overlay), "--no-progress", "--threads", str(args.threads),
                                "--out", str(out)], check=True, stderr=subprocess.DEVNULL)
                hparams = json.loads((out / "hparams.json").read_text())
                timings = json.loads((out / "timings.json").read_text())
                epochs = sum(t["epochs"] for t in hparams["grid"])
                print(f"{row}\t{fold}\t{pruner}\t{hparams['valid']:.4f}\t{epochs}\t{hparams['search']['pruned']}\t"
                      f"{hparams['search']['trials']}\t{timings['train_seconds']:.1f}", flush=True)


if __name__ == "__main__":
    main()

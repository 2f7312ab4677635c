"""Learning curves of params rows at several learning rates on one fold, to choose the rows' lr grids.

For each row and learning rate it writes an overlay with a copy of the row whose ``optim.args.lr`` grid is
that one rate (and the ``--point`` values one-value grids in place of theirs, so that one curve is one
training), trains it with ``srdiv train`` on the fold, and prints one line per run: validation
alpha-nDCG@20 at a few epochs, the best epoch and value, and seconds per epoch. Inputs are a finished
run's bundles and samples (``work/<dataset>``).

    python benchmarks/lr_curves.py --rows DSSA HDSSA --lrs 0.0003 0.001 0.003 0.01 --point model.args.lam=1.0
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from srdiv.experiment import model_rows, model_spec
from srdiv.params import load_params

SHOWN_EPOCHS = (1, 2, 5, 10, 20, 30, 50, 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", required=True)
    parser.add_argument("--lrs", nargs="+", type=float, required=True)
    parser.add_argument("--point", nargs="*", default=[], help="tune path=value fixed instead of its grid")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--params", nargs="+", type=Path, default=[Path("params.yaml")])
    parser.add_argument("--work", type=Path, default=Path("work/wordnet-div"))
    parser.add_argument("--collection", type=Path, default=Path("data/collections/wordnet-div"))
    parser.add_argument("--out", type=Path, default=None, help="keep the trained runs here (default: a temp dir)")
    args = parser.parse_args()

    values = load_params(args.params)
    rows = model_rows(values)
    point = {k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in args.point)}
    out = args.out or Path(tempfile.mkdtemp(prefix="lr-curves-"))
    results = []
    for row in args.rows:
        spec = model_spec(values, row)
        for lr in args.lrs:
            name = f"{row}@lr{lr:g}"
            entry = dict(rows[row])
            tune = entry.get("tune") or {}
            entry["tune"] = {**tune, **{k: [v] for k, v in point.items() if k in tune}, "optim.args.lr": [lr]}
            overlay = out / f"{name}.yaml"
            overlay.parent.mkdir(parents=True, exist_ok=True)
            overlay.write_text(yaml.safe_dump({"models": {name: entry}}))
            rep = spec.representation or "doc2vec"
            run_dir = out / name / f"fold{args.fold}"
            command = ["srdiv", "train", "--model", name, "--fold", str(args.fold),
                       "--bundle", str(args.work / "bundle" / f"{rep}.npz"), "--collection", str(args.collection),
                       *[a for p in args.params for a in ("--params", str(p))], "--params", str(overlay),
                       "--no-progress", "--threads", "1", "--out", str(run_dir)]
            if spec.objective:
                command += ["--samples", str(args.work / "samples" / f"fold{args.fold}" / "samples.npz")]
            if spec.prior:
                command += ["--prior", str(args.work / "models" / spec.prior / f"fold{args.fold}" / "model.pt")]
            if not (run_dir / "curve.parquet").exists():
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            curve = pd.read_parquet(run_dir / "curve.parquet")
            best = curve.loc[curve["valid"].idxmax()]
            record = {"row": row, "lr": lr, "epochs run": len(curve), "best epoch": int(best["epoch"]),
                      "best valid": best["valid"], "s/epoch": curve["seconds"].median()}
            record.update({f"@{e}": curve.loc[curve["epoch"] == e, "valid"].item()
                           for e in SHOWN_EPOCHS if (curve["epoch"] == e).any()})
            results.append(record)
            print(record, file=sys.stderr, flush=True)
    print(f"fold {args.fold}; point {point or 'tune grid'}; runs in {out}")
    print(pd.DataFrame(results).to_markdown(index=False, floatfmt=".4f"))


if __name__ == "__main__":
    main()

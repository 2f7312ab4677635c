#!/usr/bin/env bash
# Compares the two list-pairwise sample draws (samples.draw: per_length | prefixes) on the same budget:
# one model row trained on each fold with each draw (same seed, epochs, early stopping), then a paired
# t-test of the test queries' alpha-nDCG@20 over all folds.
#
#   bash benchmarks/compare_sample_draws.sh [ROW] [OUT]      (default DSSA, work/compare-draws)
#
# Needs the dataset's bundles (make run, or snakemake work/wordnet-div/bundle/lda.npz). Extra
# overlays (e.g. a one-point tuning grid) go in $OVERLAYS as "--params FILE ...".
set -euo pipefail
ROW=${1:-DSSA}
OUT=${2:-work/compare-draws}
DATASET=wordnet-div
COLLECTION=data/collections/$DATASET
REPR=${REPR:-lda}                       # the bundle the row reads (its params.yaml representation)
BUNDLE=work/$DATASET/bundle/$REPR.npz
mkdir -p "$OUT"
for draw in per_length prefixes; do
  printf 'samples: {draw: %s}\n' "$draw" > "$OUT/$draw.yaml"
  for fold in 1 2 3 4 5; do
    dir=$OUT/$draw/fold$fold
    [ -f "$dir/metrics.parquet" ] && continue
    srdiv samples --bundle "$BUNDLE" --collection "$COLLECTION" --fold "$fold" --params params.yaml \
      ${OVERLAYS:-} --params "$OUT/$draw.yaml" --out "$dir/samples"
    srdiv train --model "$ROW" --fold "$fold" --bundle "$BUNDLE" --collection "$COLLECTION" \
      --samples "$dir/samples/samples.npz" --params params.yaml ${OVERLAYS:-} --params "$OUT/$draw.yaml" \
      --no-progress --threads 1 --out "$dir"
    srdiv rank --model-dir "$dir" --fold "$fold" --bundle "$BUNDLE" --collection "$COLLECTION" --out "$dir" --threads 1
    srdiv evaluate --collection "$COLLECTION" --run "$dir/run.txt" --fold "$fold" --out "$dir/metrics.parquet"
  done
done
python - "$OUT" <<'PY'
import sys, json, pathlib
import pandas as pd
from srdiv.metrics.stats import paired_pvalues
out = pathlib.Path(sys.argv[1])
frames = {}
for draw in ("per_length", "prefixes"):
    parts = [pd.read_parquet(p) for p in sorted(out.glob(f"{draw}/fold*/metrics.parquet"))]
    m = pd.concat(parts)
    frames[draw] = m[m["measure"] == "alpha_nDCG@20"].set_index("qid")["value"]
    epochs = [json.loads(p.read_text())["grid"] for p in sorted(out.glob(f"{draw}/fold*/hparams.json"))]
    secs = [json.loads(p.read_text())["train_seconds"] for p in sorted(out.glob(f"{draw}/fold*/timings.json"))]
    print(f"{draw}: alpha-nDCG@20 {frames[draw].mean():.4f} over {len(frames[draw])} queries; "
          f"train seconds per fold {[round(s) for s in secs]}; "
          f"best epoch / epochs {[(g['best_epoch'], g['epochs']) for gs in epochs for g in gs]}")
values = pd.DataFrame(frames).dropna()
p = paired_pvalues(values, "per_length")["prefixes"]
diff = values["prefixes"].mean() - values["per_length"].mean()
print(f"prefixes - per_length: {diff:+.4f} (paired t-test p = {p:.3g}, {len(values)} queries)")
PY

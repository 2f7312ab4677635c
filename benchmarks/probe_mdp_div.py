"""MDP-DIV's model and objective trained directly on one planted fold: training lists against held-out queries.

Trains :class:`srdiv.models.mdp_div.MDPDiv` with the ``reinforce`` objective (SGD, one query per update, as
Algorithm 1) on the queries of two folds, and prints every 10 epochs the arg-max rankings' mean
alpha-nDCG@20 (against each list's greedy ideal) on the training lists and on the third fold's top 50
(docs/planted.md, MDP-DIV):

    python benchmarks/probe_mdp_div.py --bundle work/planted/bundle/doc2vec.npz \\
        --folds work/planted/collection/folds.parquet --hidden 5 --train-docs 20 --lr 0.1
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch

from srdiv.features.bundle import Bundle
from srdiv.metrics.diversity import alpha_ndcg_candidates, rank_labels
from srdiv.models.mdp_div import MDPDiv
from srdiv.models.ranking import rank_bundle
from srdiv.objectives.reinforce import Reinforce


def ndcg20(bundle: Bundle, orders: np.ndarray) -> float:
    """Mean alpha-nDCG@20 of ``orders [queries, docs]`` (-1 padding) against each list's greedy ideal."""
    labels = bundle.labels * bundle.doc_mask[..., None]
    ranked = rank_labels(labels, np.clip(orders, 0, None)) * (orders >= 0)[..., None]
    return float(alpha_ndcg_candidates(ranked, labels).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--folds", required=True)
    ap.add_argument("--test-fold", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=5)
    ap.add_argument("--init-scale", type=float, default=1.0)
    ap.add_argument("--train-docs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--episodes", type=int, default=1)
    ap.add_argument("--baseline", default="none")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    bundle = Bundle.load(args.bundle)
    fold_of = pd.read_parquet(args.folds).set_index("qid")["fold"]
    folds = fold_of.loc[list(bundle.qids)].to_numpy()
    n_folds = int(folds.max())
    valid = args.test_fold % n_folds + 1          # the fold the pipeline validates on, left out here too
    train = bundle.select(np.flatnonzero((folds != args.test_fold) & (folds != valid))).truncate(args.train_docs)
    test = bundle.select(np.flatnonzero(folds == args.test_fold))

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = MDPDiv(bundle.dims, hidden=args.hidden, init_scale=args.init_scale)
    objective = Reinforce(episodes=args.episodes, baseline=args.baseline)
    optim = torch.optim.SGD(model.parameters(), lr=args.lr)
    objective.prepare(train, rng)
    data, cpu = train.to_torch(), torch.device("cpu")
    initial = np.where(test.doc_mask, np.arange(test.doc_mask.shape[1]), -1)
    print(f"test fold {args.test_fold}: {len(train)} training queries (top {args.train_docs}), {len(test)} test "
          f"queries (top 50); initial run {ndcg20(test, initial):.3f}")
    print("epoch\ttraining lists\ttest")
    print(f"0\t{ndcg20(train, rank_bundle(model, train, cpu)):.3f}\t{ndcg20(test, rank_bundle(model, test, cpu)):.3f}")
    for epoch in range(1, args.epochs + 1):
        for minibatch in objective.batches(None, len(train), 1, rng):
            optim.zero_grad()
            objective.loss(model, data, minibatch).backward()
            optim.step()
        if epoch % 10 == 0:
            print(f"{epoch}\t{ndcg20(train, rank_bundle(model, train, cpu)):.3f}\t"
                  f"{ndcg20(test, rank_bundle(model, test, cpu)):.3f}", flush=True)


if __name__ == "__main__":
    main()

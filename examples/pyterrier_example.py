"""srdiv's diversifiers in one ``pt.Experiment`` on the committed wordnet-div collection (README, "PyTerrier").

    python examples/pyterrier_example.py [--row DSSA] [--work work/wordnet-div]

Runs, for all 751 queries, with significance tests against the first stage (paired t-test, Holm):

* ``first_stage``: srdiv's query likelihood (Dirichlet, mu = 2000) over title, body and url, leaving out the
  documents that hold the query word as a lemma: the collection's initial run (data card, step 4);
* ``first_stage >> XQuAD(...)`` and ``first_stage >> PM2(...)``, ``P(d|q)`` and ``P(d|i)`` from srdiv's BM25
  over the whole text (anchor included), over the collection's level-1 suggestions;
* ``first_stage >> TrainedModel(...)``: the pipeline's trained ``--row`` (every fold's ``model.pt`` and the
  row's bundle under ``--work``, which ``make run`` leaves); left out, with a note, before ``make run``.

No Java: PyTerrier's evaluation goes through ir_measures.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pyterrier as pt

from srdiv import pyterrier as spt
from srdiv.collection.schema import load_collection
from srdiv.collection.wordnet import own_entry_pairs
from srdiv.experiment import model_spec
from srdiv.params import load_params

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=ROOT / "data" / "collections" / "wordnet-div")
    parser.add_argument("--work", type=Path, default=ROOT / "work" / "wordnet-div",
                        help="the pipeline's work directory (models/<ROW>/fold<k>/model.pt, bundle/<repr>.npz)")
    parser.add_argument("--row", default="DSSA", help="the trained row of params.yaml to add")
    args = parser.parse_args()

    coll = load_collection(args.collection, with_docs=True)
    topics = spt.topics(coll)
    first_stage = spt.Retriever(coll.docs, fields=("title", "body", "url"), model="lmir", k=50,
                                exclude=own_entry_pairs(coll))
    scorer = spt.Retriever(coll.docs, fields=("title", "body", "anchor", "url"), model="bm25")
    systems = {
        "first_stage": first_stage,
        "xQuAD": first_stage >> spt.XQuAD(scorer, coll, lam=1.0, prob="minmax"),
        "PM2": first_stage >> spt.PM2(scorer, coll, lam=0.5, prob="minmax"),
    }
    rows = args.work / "models" / args.row
    representation = model_spec(load_params([ROOT / "params.yaml"]), args.row).representation or "doc2vec"
    bundle = args.work / "bundle" / f"{representation}.npz"
    if rows.is_dir() and bundle.exists():
        systems[args.row] = first_stage >> spt.TrainedModel(rows, bundle, coll)
    else:
        print(f"({args.row} left out: no {rows} or {bundle}; run `make run` first)", file=sys.stderr)

    warnings.filterwarnings("ignore", message="There are shared pipeline components")  # the first stage, run 3x
    table = pt.Experiment(list(systems.values()), topics, spt.qrels(coll), spt.MEASURES, names=list(systems),
                          baseline=0, correction="holm")
    print(spt.marked_table(table).to_markdown(index=False))
    print("▲/▼: significantly better/worse than first_stage (paired t-test, Holm-corrected p < 0.05)")


if __name__ == "__main__":
    main()

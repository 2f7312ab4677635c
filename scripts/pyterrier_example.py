"""srdiv's diversifiers in one ``pt.Experiment`` on the committed wordnet-div collection (README, "PyTerrier").

    python scripts/pyterrier_example.py [--row DSSA] [--work work/wordnet-div]

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

import ir_measures
import pandas as pd
import pyterrier as pt

from srdiv import pyterrier as spt
from srdiv.collection.schema import load_collection
from srdiv.experiment import model_spec
from srdiv.params import load_params

ROOT = Path(__file__).resolve().parents[1]
MEASURES = [ir_measures.parse_measure(m) for m in ("alpha_nDCG@20", "ERR_IA@20", "NRBP", "P_IA@20", "StRecall@20")]


def own_entries(docs: pd.DataFrame, topics: pd.DataFrame) -> pd.DataFrame:
    """``qid, docno`` of the documents (synsets) whose title lists the query word as a lemma."""
    lemmas = docs["title"].str.lower().str.split(", ").explode()
    hits = lemmas[lemmas.isin(set(topics["query"]))]
    found = pd.DataFrame({"query": hits.to_numpy(), "docno": docs["docno"].to_numpy()[hits.index]})
    return topics.merge(found)[["qid", "docno"]]


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
                                exclude=own_entries(coll.docs, topics))
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
    table = pt.Experiment(list(systems.values()), topics, spt.qrels(coll), MEASURES, names=list(systems),
                          baseline=0, correction="holm")
    print(marked(table).to_markdown(index=False))
    print("▲/▼: significantly better/worse than first_stage (paired t-test, Holm-corrected p < 0.05)")


def marked(table: pd.DataFrame) -> pd.DataFrame:
    """Means to 3 places, ▲/▼ where the Holm-corrected test rejects equality with the first row."""
    out = table[["name"]].copy()
    for m in map(str, MEASURES):
        arrow = (table[f"{m} +"] > table[f"{m} -"]).map({True: "▲", False: "▼"}).where(table[f"{m} reject"], "")
        out[m] = table[m].map("{:.3f}".format) + arrow
    return out


if __name__ == "__main__":
    main()

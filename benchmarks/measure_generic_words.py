"""How well debian-facets' generic-word rule (a word's adaptation) finds generic words, by threshold.

The rule reads the documents' text only. To judge it from outside, every candidate query word (the
words the rule is applied to: scope and name conditions met) gets a label from WordNet 3.0: *generic*
when WordNet's sense-tagged uses of it (``tagsense_cnt`` of ``index.<pos>``) are mostly as adjective,
verb or adverb, *noun* otherwise (by synset counts when no use is tagged); words WordNet lacks stay
unlabelled. It prints the mean-rank AUC of the adaptation (low = generic) and, for contrast, of the
words' document frequency in the bodies (high = generic, a plain stopword list), then per threshold: the
candidate words it removes, the queries of the collection it removes (build without the rule), the
share of removed labelled words that are generic (precision; the base rate is the first row's) and
the share of generic words removed (recall).

    python benchmarks/measure_generic_words.py --indexes work/debian-indexes --wordnet-dir /usr/share/wordnet
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from srdiv.collection.debian import DebianFacetsConfig, build_debian_facets
from srdiv.collection.debian_docs import build_docs, read_indexes
from srdiv.collection.debian_topics import candidate_queries, title_words
from srdiv.index.analysis import tokenize_many
from srdiv.index.sparse import count_matrix
from srdiv.params import load_params

THRESHOLDS = (0.1, 0.15, 0.18, 0.2, 0.21, 0.22, 0.23, 0.24, 0.26, 0.28, 0.3)
POS = ("noun", "verb", "adj", "adv")


def wordnet_uses(directory: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """``{lemma: {pos: (tagged uses, synsets)}}`` from WordNet's ``index.<pos>`` files."""
    uses: dict[str, dict[str, tuple[int, int]]] = {}
    for pos in POS:
        for line in (directory / f"index.{pos}").read_text().splitlines():
            if line.startswith(" "):
                continue
            field = line.split()
            pointers = int(field[3])
            uses.setdefault(field[0], {})[pos] = (int(field[5 + pointers]), int(field[2]))
    return uses


def label(word: str, uses: dict[str, dict[str, tuple[int, int]]]) -> str | None:
    """``generic`` when a word's tagged uses (else synsets) are mostly not nouns, ``noun``, or None."""
    entry = uses.get(word)
    if entry is None:
        return None
    for k in (0, 1):
        noun, other = entry.get("noun", (0, 0))[k], sum(v[k] for p, v in entry.items() if p != "noun")
        if noun + other:
            return "noun" if noun >= other else "generic"
    return None


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a positive ranks above a negative by ``score`` (ties half)."""
    ranks = rankdata(score)
    n_pos, n_neg = positive.sum(), (~positive).sum()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--indexes", type=Path, required=True)
    ap.add_argument("--wordnet-dir", type=Path, required=True)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    args = ap.parse_args()
    cfg = dataclasses.replace(DebianFacetsConfig.from_params(load_params(args.params)), min_adaptation=0.0)
    ix = read_indexes(args.indexes, cfg.architecture)
    docs = build_docs(ix, cfg).docs
    words, stems, form = title_words(docs["title"].tolist())
    cands = candidate_queries(words, stems, form, docs, cfg)
    body = count_matrix(tokenize_many(docs["body"].tolist()), stems)
    cands["body_df"] = np.asarray((body > 0).sum(axis=0)).ravel()[stems.get_indexer(cands["stem"])]
    uses = wordnet_uses(args.wordnet_dir)
    cands["label"] = [label(s, uses) or label(q, uses) for s, q in zip(cands["stem"], cands["query"])]
    queries = build_debian_facets(ix, cfg).queries
    labelled = cands[cands["label"].notna()]
    generic = (labelled["label"] == "generic").to_numpy()
    print(f"{len(cands)} candidate words, {len(labelled)} labelled by WordNet, {generic.sum()} of them generic; "
          f"{len(queries)} queries without the rule")
    print(f"AUC for generic words: adaptation (low) {auc(-labelled['adaptation'].to_numpy(), generic):.3f}, "
          f"body document frequency (high) {auc(labelled['body_df'].to_numpy(), generic):.3f}\n")
    print("| min_adaptation | words removed | queries removed | generic share of removed (labelled) | "
          "generic words removed |\n|---:|---:|---:|---:|---:|")
    for t in (0.0,) + THRESHOLDS:
        removed = labelled["adaptation"].to_numpy() < t if t else np.ones(len(labelled), dtype=bool)
        precision = generic[removed].mean() if removed.any() else float("nan")
        n_words = int((cands["adaptation"] < t).sum()) if t else len(cands)
        n_queries = int((queries["adaptation"] < t).sum()) if t else len(queries)
        print(f"| {t:g}{' (all)' if not t else ''} | {n_words} | {n_queries} | {precision:.3f} | "
              f"{(generic & removed).sum() / generic.sum():.3f} |")


if __name__ == "__main__":
    main()

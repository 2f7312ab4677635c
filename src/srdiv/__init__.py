"""srdiv: supervised search result diversification in one reproducible pipeline.

The package layout follows the data flow; each layer imports only from the layers above it in
this list, and no module imports itself back through others (``tests/test_layers.py`` fails
otherwise)::

    io, params, registry, provenance    files, configuration, registries, where numbers came from
    metrics                             the official measures and their names, run files, paired tests,
                                        ideal rankings and the metric M of training targets
    experiment                          rows of params.yaml, train settings, the folds a run uses
    index                               tokenisation and sparse BM25 / query-likelihood scoring
    collection                          collections in the one schema (TREC, wordnet-div, subsets)
    text                                documents, doc2vec / LDA / SVD, pseudo-documents
    features                            relevance and diversity features, the training bundle, the
                                        fold protocol (a trial's queries of the bundle)
    models                              one model per module, and batched ranking with any of them
    objectives                          one training loss per module
    sampling                            list-pairwise and PAMM samples (objectives take them as arguments)
    train                               trainer, the tune-train-rank job
    report                              every row's metrics gathered, tables, plots, the results README
    pyterrier                           PyTerrier transformers over trained rows (optional extra)
    cli                                 the ``srdiv`` program: entry point, signals, every stage's command,
                                        the dvc.yaml writer

Every stage is a ``srdiv <stage>`` command (``srdiv/cli/<package>.py``, gathered by :mod:`srdiv.cli.main`);
Snakemake rules and DVC stages only call those commands.
"""

__version__ = "0.1.0"

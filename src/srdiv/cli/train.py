"""``srdiv train`` and ``srdiv rank``: one model on one fold; ``srdiv check-rows``: the rows of a run checked
before its first job (the Snakefile's onstart handler: the Snakefile builds its DAG without the models and torch)."""

from __future__ import annotations

from pathlib import Path

import typer

from srdiv.cli.options import PARAMS

THREADS = typer.Option(0, help="CPU threads of the job (0: torch's default). srdiv train: a row that trains "
                               "on the CPU trains up to this many trials of a search batch at once, a process and a "
                               "thread each (the same models as one thread); otherwise torch's threads. One thread "
                               "per process is fastest for these small models on a busy machine.")


def configure_torch(threads: int) -> None:
    """Limit torch's intra-op CPU threads (no effect with 0) and flush denormal floats to zero.

    Denormals (|x| < 1.2e-38) appear as training goes on (tiny gradients and optimiser
    moments) and make CPU arithmetic on them many times slower: DSSA after 8 epochs trains
    3.3x slower per batch without flushing (``benchmarks/bench_training.py``, docs/benchmarks.md).
    Flushing them to 0 changes no result beyond that precision.
    """
    import torch

    torch.set_flush_denormal(True)
    if threads > 0:
        torch.set_num_threads(threads)


def train(
    model: str = typer.Option(..., help="Row of params.yaml 'models' (e.g. DSSA, ListMLE, Initial)."),
    fold: int = typer.Option(..., help="Test fold of this trial (validation: the next fold)."),
    bundle: Path = typer.Option(..., help="Bundle .npz of the dataset (srdiv bundle)."),
    collection: Path = typer.Option(..., help="Collection directory (folds, qrels)."),
    params: list[Path] = PARAMS,
    out: Path = typer.Option(..., help="Output directory, e.g. work/<dataset>/models/<Row>/fold<k>."),
    samples: Path | None = typer.Option(None, help="Samples of this fold (srdiv samples), for objectives "
                                                      "that need them (list_pairwise, pamm)."),
    prior: Path | None = typer.Option(None, help="Output directory of the prior row on this fold (rows "
                                                    "with params.prior), e.g. .../models/ListMLE/fold<k>."),
    progress: bool = typer.Option(True, help="Show a progress bar per training run."),
    threads: int = THREADS,
    rank_test: bool = typer.Option(False, "--rank", help="Then rank the test queries with the saved model "
                                                         "(run.txt, rank.json in --out), as srdiv rank does, "
                                                         "without loading the bundle again."),
    reuse: Path | None = typer.Option(None, help="Another job directory of this row and fold (a study "
                                                    "passes the main run's): when its model was trained with "
                                                    "the same settings, seed and inputs, copy it instead of "
                                                    "training again."),
) -> None:
    """Tune on the validation fold and train one model row; save the chosen model (model.pt)."""
    from srdiv.collection.schema import load_collection
    from srdiv.experiment import model_spec
    from srdiv.features.bundle import Bundle
    from srdiv.io import claim
    from srdiv.metrics.runs import RUN_FILE
    from srdiv.params import load_params
    from srdiv.sampling.samples import Samples
    from srdiv.train.rows import check_rows
    from srdiv.train.trained import Trained
    from srdiv.train.tuning import run_job

    configure_torch(threads)
    loaded = load_params(params)
    check_rows(loaded, [model], params)
    if rank_test:                   # the run's files too are refused before training when srdiv did not write them
        for name in (RUN_FILE, "rank.json"):
            claim(out / name)
    spec = model_spec(loaded, model)
    _check_device(spec, loaded, params)
    data, coll = Bundle.load(bundle), load_collection(collection)
    hparams = run_job(spec, data, coll, fold, out, seed=loaded.get("seed", 0),
                      samples=Samples.load(samples) if samples else None,
                      prior=Trained.load(prior) if prior else None, progress=progress, reuse=reuse,
                      threads=threads)
    typer.echo(f"{model} fold {fold}: chosen {hparams['chosen']}, validation "
               f"{hparams['valid_measure']} {hparams['valid']:.4f}", err=True)
    if rank_test:
        _rank(Trained.load(out), data, coll, fold, out)


def check_rows(
    row: list[str] = typer.Option(..., "--row", help="A row of params.yaml 'models' to check (repeat --row)."),
    params: list[Path] = PARAMS,
) -> None:
    """Check each ROW as srdiv train checks its own: its model and objective exist, take the keywords it gives
    them, and take its values at every tuning point. A mistake is one line naming the params file and key."""
    from srdiv.params import load_params
    from srdiv.train.rows import check_rows as check

    checked = check(load_params(params), row, params)
    typer.echo(f"check-rows: {len(checked)} rows, {sum(checked.values())} tuning points checked", err=True)


def rank(
    model_dir: Path = typer.Option(..., help="model.pt of 'srdiv train', or its directory."),
    fold: int = typer.Option(..., help="Test fold of this trial."),
    bundle: Path = typer.Option(..., help="Bundle .npz of the dataset (srdiv bundle)."),
    collection: Path = typer.Option(..., help="Collection directory (folds)."),
    out: Path = typer.Option(..., help="Output directory (run.txt, rank.json); usually the model directory."),
    threads: int = THREADS,
    params: list[Path] | None = typer.Option(None, "--params", help="The setting's params files, for the "
                                                "models and objectives their import: lists register."),
) -> None:
    """Rank the test queries of trial FOLD with a trained model: a TREC run file."""
    from srdiv.collection.schema import load_collection
    from srdiv.features.bundle import Bundle
    from srdiv.params import load_params
    from srdiv.train.trained import Trained

    if params:
        load_params(params)     # imports the components a model from outside the package needs
    configure_torch(threads)
    _rank(Trained.load(model_dir), Bundle.load(bundle), load_collection(collection), fold, out)


def _check_device(spec, loaded: dict, params: list[Path]) -> None:
    """The row's ``train.device`` is one this machine has, before any work; else one line naming the last
    params file that sets it (``train.device``, or in the row or a row it extends)."""
    from srdiv.io import InputError
    from srdiv.models.ranking import resolve_device
    from srdiv.params import lineage, read_yaml
    from srdiv.train.device import row_device

    try:
        resolve_device(row_device(spec))
    except InputError as err:
        rows = lineage(loaded, spec.row)

        def sets(path: Path) -> bool:
            given = read_yaml(path) or {}
            entries = [given.get("train") or {}, *(((given.get("models") or {}).get(row) or {}).get("train") or {}
                                                   for row in rows)]
            return any(isinstance(entry, dict) and "device" in entry for entry in entries)
        raise InputError(next((path for path in reversed(params) if sets(path)), err.path), err.reason) from None


def _rank(trained, bundle, collection, fold: int, out: Path) -> None:
    """Rank trial ``fold``'s test queries (:func:`srdiv.train.rank.rank_job`) and say how fast."""
    from srdiv.train.rank import rank_job

    timings = rank_job(trained, bundle, collection, fold, out)
    typer.echo(f"rank fold {fold}: {timings['test_queries']} queries, "
               f"{timings['rank_ms_per_query']:.1f} ms per query", err=True)


def register(app: typer.Typer) -> None:
    """Add ``train``, ``rank`` and ``check-rows`` to the CLI."""
    app.command("train")(train)
    app.command("rank")(rank)
    app.command("check-rows")(check_rows)

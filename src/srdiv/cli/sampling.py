"""``srdiv samples``: list-pairwise samples and PAMM rankings of one fold's training queries."""

from __future__ import annotations

from pathlib import Path

import typer

from srdiv.cli.options import PARAMS


def samples(
    bundle: Path = typer.Option(..., help="Bundle .npz of the dataset."),
    collection: Path = typer.Option(..., help="Collection directory (folds)."),
    fold: int = typer.Option(..., help="Test fold of the trial whose training queries are sampled."),
    params: list[Path] = PARAMS,
    out: Path = typer.Option(..., help="Output directory, e.g. work/<dataset>/samples/fold<k> (samples.npz)."),
    row: str | None = typer.Option(None, help="A models row whose own `samples` settings override the section."),
) -> None:
    """Sample the training queries of trial FOLD (top train_docs candidates), seeded by (seed, fold)."""
    import time

    from srdiv.collection.schema import load_collection
    from srdiv.experiment import TrainSettings
    from srdiv.features.bundle import Bundle
    from srdiv.features.folds import fold_queries, fold_split
    from srdiv.params import load_params
    from srdiv.sampling.samples import SAMPLES_FILE, SampleSettings, make_samples

    loaded = load_params(params)
    split = fold_split(load_collection(collection).folds, fold, str(collection / "folds.parquet"))
    train = fold_queries(Bundle.load(bundle), split.train, TrainSettings.from_params(loaded).train_docs)
    start = time.perf_counter()
    made = make_samples(train, SampleSettings.from_params(loaded, row), [loaded.get("seed", 0), fold])
    made.save(out / SAMPLES_FILE)
    lp = made.list_pairwise
    typer.echo(f"samples fold {fold}: {len(train)} queries, {len(lp.context_sequence)} contexts "
               f"({len(lp.sequences)} sequences), {len(lp.pairs)} pairs "
               f"in {time.perf_counter() - start:.1f} s", err=True)


def register(app: typer.Typer) -> None:
    """Add ``samples`` to the CLI."""
    app.command("samples")(samples)

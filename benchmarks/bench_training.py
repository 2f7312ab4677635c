"""Training-speed benchmark: one fold of a dataset, the current srdiv beside another checkout of it.

Prints, per model row and implementation, the seconds a training epoch takes, the contexts
(list-pairwise rows) or queries (other objectives) trained per second, the loss of the first
mini-batch, and, for the rows named with ``--flops``, the achieved FLOP rate of a training
step as a share of the rate this machine reaches on plain matrix products of the same shapes,
and the matrix-product work of that step per context.

    python benchmarks/bench_training.py --baseline ../srdiv-before/src [--rows DSSA DESA ...] [--fold 1]
        [--baseline-params ../srdiv-before/params.yaml]    # where the params format changed since
    python benchmarks/bench_training.py --rows DSSA DESA --threads 1 2     # torch threads compared instead
    python benchmarks/bench_training.py --devices cpu cuda --synthetic    # devices compared, on random data

Every implementation runs in a subprocess of its own (``PYTHONPATH`` = its ``src``) on the
same bundle, one torch thread, one after the other in the same run. Samples are made by
each implementation's own ``srdiv samples`` code with the same seed, so the ``per_length``
draws agree and the first-batch losses can be compared; the current implementation is also
run on the ``prefixes`` draw. List-pairwise rows are timed on ``--batches`` mini-batches
(after two warm-up batches; the epoch time is contexts per epoch / contexts per second);
other rows on ``--epochs`` whole epochs. Timings are medians over the timed batches or
epochs. The numbers hold for the machine and the fold they were measured on.

``--synthetic`` trains on a random bundle with the shapes of the wordnet-div bundle
(``SYNTHETIC``) and five folds by query index instead of ``work/<dataset>/bundle``: for a
machine that has srdiv's code but not the pipeline's files. Its samples differ from the real
ones (random labels are denser), so its timings are the models' cost at those shapes, not a
measurement of the real fold.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROWS = ["DSSA", "HDSSA", "DESA", "DALETOR", "DALETOR-GSF-LC", "PAMM-NTN", "MDP-DIV"]
FLOP_ROWS = ["DSSA", "DESA"]
SYNTHETIC = {"queries": 751, "docs": 50, "subs": 10, "subs2": 100, "subtopics": 8, "emb": 100, "feats": 18,
             "div_feats": 5}
"""``random_bundle`` arguments: the axes of ``work/wordnet-div/bundle/doc2vec.npz``."""


def worker(args: argparse.Namespace) -> dict:
    """Runs inside the subprocess, with the implementation under test on ``sys.path``."""
    import numpy as np
    import pandas as pd
    import torch

    from srdiv.collection.schema import load_collection
    from srdiv.features.bundle import Bundle, random_bundle
    from srdiv.params import load_params
    from srdiv.registry import OBJECTIVES
    from srdiv.sampling.samples import SampleSettings, make_samples
    from srdiv.train.trainer import make_optimizer

    try:
        from srdiv.train.trained import build_model
        from srdiv.train.tuning import FoldData
    except ImportError:  # older: one module for the whole job
        from srdiv.train.job import FoldData, build_model
    try:  # each implementation configures torch as its own `srdiv train` does
        from srdiv.cli.train import configure_torch
    except ImportError:
        try:  # older: each package's commands in its commands.py
            from srdiv.train.commands import configure_torch
        except ImportError:
            configure_torch = torch.set_num_threads
    try:
        from srdiv.experiment import model_spec
    except ImportError:  # an implementation older than the {name, args} row shape
        from srdiv.train.config import model_spec
    try:
        from srdiv.features.folds import fold_queries, fold_split
    except ImportError:  # older: the fold protocol in train/
        from srdiv.train.folds import fold_split
        try:
            from srdiv.train.folds import fold_queries
        except ImportError:  # older still: select the queries, then cut their candidate lists
            from srdiv.train.folds import select_queries
            fold_queries = lambda bundle, qids, n_docs: select_queries(bundle, qids).truncate(n_docs)  # noqa: E731
    try:
        from srdiv.train.job import lookup
    except ImportError:  # newer: the registries are filled on import
        lookup = lambda registry, name: registry.get(name)  # noqa: E731
    configure_torch(args.torch_threads)
    params = load_params([Path(p) for p in args.params])
    dataset = params["datasets"][params["dataset"]]
    spec = model_spec(params, args.row)
    spec = spec.at({k: v[0] for k, v in spec.tune.items()}) if spec.tune else spec   # the first grid point
    representation = params["models"][args.row].get("representation", dataset.get("representation", "doc2vec"))
    if args.synthetic:
        bundle = random_bundle(**SYNTHETIC, seed=params.get("seed", 0))
        folds = pd.DataFrame({"qid": bundle.qids, "fold": np.arange(len(bundle)) % 5 + 1})
    else:
        folds = load_collection(dataset["collection"]).folds
        bundle = Bundle.load(f"work/{params['dataset']}/bundle/{representation}.npz")
    split = fold_split(folds, args.fold)
    data = FoldData.make(bundle, split, spec.train)
    known = {f.name for f in dataclasses.fields(SampleSettings)}   # an older implementation has fewer settings
    sample_params = {k: v for k, v in (params.get("samples") or {}).items() if k in known}
    if args.draw != "default":
        sample_params["draw"] = args.draw
    seed = params.get("seed", 0)
    train = fold_queries(bundle, split.train, spec.train.train_docs)
    samples = make_samples(train, SampleSettings(**sample_params), [seed, args.fold])

    device = torch.device(args.device)
    torch.manual_seed(seed)
    model = build_model(spec, data.valid.dims, None).to(device)
    objective_name = getattr(spec.objective, "name", spec.objective)   # older rows: a name and objective_params
    objective_args = getattr(spec.objective, "args", getattr(spec, "objective_params", {}))
    objective = lookup(OBJECTIVES, objective_name)(**objective_args)
    objective.samples = samples
    prepared = objective.prepare(data.train, np.random.default_rng([seed, 1]))
    optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad], spec.optim)
    tensors = data.train.to_torch(device)
    model.train()

    def size(minibatch) -> int:
        """Contexts in a list-pairwise mini-batch."""
        return len(getattr(minibatch, "context_sequence", getattr(minibatch, "contexts", ())))

    def step(minibatch) -> float:
        loss = objective.loss(model, tensors, minibatch)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    rng = np.random.default_rng([seed, 2])
    list_pairwise = objective_name == "list_pairwise"
    if args.denormals:
        return _denormal_effect(args, objective, prepared, data.train, spec.train.batch_size, rng, step, size)
    result = {"row": args.row, "draw": args.draw, "unit": "contexts" if list_pairwise else "queries",
              "threads": torch.get_num_threads(), "device": args.device,
              "srdiv": str(Path(sys.modules["srdiv"].__file__).parent)}
    if list_pairwise:
        batches = objective.batches(prepared, len(data.train), spec.train.batch_size, rng)
        first = next(batches)
        result["first_loss"] = step(first)
        step(next(batches))
        rates, per_epoch = [], 0
        for _ in range(args.batches):
            minibatch = next(batches)
            start = time.perf_counter()
            step(minibatch)
            rates.append(size(minibatch) / (time.perf_counter() - start))
        lp = samples.list_pairwise
        per_epoch = len(lp.context_sequence) if hasattr(lp, "context_sequence") else len(lp.contexts)
        result["per_second"] = float(np.median(rates))
        result["epoch_seconds"] = per_epoch / result["per_second"]
        if args.measure_flops:
            result.update(_flop_share(lambda: step(minibatch)))
            result["mflop_per_context"] = result["matmul_gflop"] * 1e3 / size(minibatch)
    else:
        seconds = []
        for epoch in range(args.epochs):
            start = time.perf_counter()
            for i, minibatch in enumerate(objective.batches(prepared, len(data.train), spec.train.batch_size, rng)):
                loss = step(minibatch)
                if epoch == 0 and i == 0:
                    result["first_loss"] = loss
            seconds.append(time.perf_counter() - start)
        result["epoch_seconds"] = float(np.median(seconds))
        result["per_second"] = len(data.train) / result["epoch_seconds"]
    return result


def _denormal_effect(args, objective, prepared, train, batch_size, rng, step, size) -> dict:
    """Contexts per second after ``args.denormals`` epochs of training, with denormal floats kept and flushed
    (alternately, twice each, ``args.batches`` mini-batches per measurement)."""
    import numpy as np
    import torch

    for _ in range(args.denormals):
        for minibatch in objective.batches(prepared, len(train), batch_size, rng):
            step(minibatch)
    batches = objective.batches(prepared, len(train), batch_size, rng)
    rates = {False: [], True: []}
    for flush in (False, True, False, True):
        torch.set_flush_denormal(flush)
        count, start = 0, time.perf_counter()
        for _ in range(args.batches):
            minibatch = next(batches)
            step(minibatch)
            count += size(minibatch)
        rates[flush].append(count / (time.perf_counter() - start))
    kept, flushed = float(np.median(rates[False])), float(np.median(rates[True]))
    return {"row": args.row, "draw": args.draw, "epochs": args.denormals, "kept": kept, "flushed": flushed}


def _flop_share(run_step) -> dict:
    """Achieved FLOP rate of one training step against plain matrix products of the same shapes.

    The matrix products (mm, addmm, bmm, baddbmm) of one step are recorded with their shapes,
    then replayed alone on random tensors; the share is the replay time over the step time
    (both medians of five), i.e. the achieved matmul FLOP rate over the machine's rate on them.
    """
    import numpy as np
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    kinds = {aten.mm.default: (0, 1), aten.addmm.default: (1, 2), aten.bmm.default: (0, 1),
             aten.baddbmm.default: (1, 2)}

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.shapes = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in kinds:
                a, b = kinds[func]
                self.shapes.append((tuple(args[a].shape), tuple(args[b].shape)))
            return func(*args, **(kwargs or {}))

    with Record() as record:
        run_step()
    step_times = []
    for _ in range(5):
        start = time.perf_counter()
        run_step()
        step_times.append(time.perf_counter() - start)
    operands = [(torch.randn(a), torch.randn(b)) for a, b in record.shapes]
    flops = sum(2 * np.prod(a) * b[-1] for a, b in record.shapes)
    replay = []
    for _ in range(5):
        start = time.perf_counter()
        for a, b in operands:
            torch.matmul(a, b)
        replay.append(time.perf_counter() - start)
    step_s, replay_s = float(np.median(step_times)), float(np.median(replay))
    return {"matmul_gflop": flops / 1e9, "step_gflops": flops / step_s / 1e9,
            "matmul_gflops": flops / replay_s / 1e9, "flop_share": replay_s / step_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="src directory of the implementation to compare with")
    parser.add_argument("--rows", nargs="+", default=ROWS)
    parser.add_argument("--flops", nargs="*", default=FLOP_ROWS, help="rows whose FLOP share is measured")
    parser.add_argument("--denormals", nargs="*", default=["DSSA"], help="rows whose speed after training, "
                        "with denormal floats kept and flushed, is measured (current implementation)")
    parser.add_argument("--denormal-epochs", type=int, default=8, help="epochs trained before that measurement")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--params", nargs="+", default=["params.yaml"])
    parser.add_argument("--baseline-params", nargs="+", help="params files the baseline reads, where its "
                        "params format differs (default: --params)")
    parser.add_argument("--batches", type=int, default=20, help="timed mini-batches of a list-pairwise row")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs of the other rows")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--draw", default="default", help=argparse.SUPPRESS)
    parser.add_argument("--measure-flops", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--denormal-run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--threads", nargs="*", type=int, default=[], help="torch thread counts to compare "
                        "(current implementation, prefixes draw, the rows of --rows), e.g. 1 2")
    parser.add_argument("--torch-threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--devices", nargs="*", default=[], help="torch devices to compare (current implementation, "
                        "prefixes draw, the rows of --rows, one thread), e.g. cpu cuda")
    parser.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    parser.add_argument("--synthetic", action="store_true", help="train on a random bundle with the shapes of "
                        "wordnet-div's (no pipeline files needed); see the module docstring")
    args = parser.parse_args()
    if args.worker:
        args.denormals = args.denormal_run
        print(json.dumps(worker(args)))
        return
    from srdiv.experiment import model_specs
    from srdiv.params import load_params

    here = str(Path(__file__).resolve().parents[1] / "src")
    specs = model_specs(load_params([Path(p) for p in args.params]))
    runs = [("before", args.baseline, "default", args.baseline_params or args.params)] if args.baseline else []
    runs += [("now", here, "per_length", args.params), ("now", here, "prefixes", args.params)]
    if args.threads or args.devices:
        key, values = ("threads", args.threads) if args.threads else ("device", args.devices)
        print(compare_table([_run_worker(args, here, row, "prefixes", [], **{key: value})
                             for row in args.rows for value in values], key, values[0]))
        return
    lines = []
    for row in args.rows:
        for label, src, draw, params in runs:
            if draw == "prefixes" and specs[row].objective.name != "list_pairwise":
                continue
            lines.append({**_run_worker(args, src, row, draw, ["--measure-flops"] if row in args.flops else [],
                                        params=params), "impl": label})
    print(table(lines))
    if args.denormals:
        print("\n| row | trained epochs | contexts / s, denormals kept | flushed to zero | ratio |\n|---|---|---|---|---|")
    for row in args.denormals:
        e = _run_worker(args, here, row, "prefixes", ["--denormal-run", str(args.denormal_epochs)])
        print(f"| {row} | {e['epochs']} | {e['kept']:.0f} | {e['flushed']:.0f} | {e['flushed'] / e['kept']:.1f}x |")


def _run_worker(args: argparse.Namespace, src: str, row: str, draw: str, extra: list[str], threads: int = 1,
                params: list[str] | None = None, device: str = "cpu") -> dict:
    """One worker subprocess with ``src`` first on the path, ``threads`` torch threads, ``params`` (default
    ``--params``) and the model on ``device``; its JSON result (echoed to stderr)."""
    cmd = [sys.executable, __file__, "--worker", "--row", row, "--draw", draw, "--fold", str(args.fold),
           "--batches", str(args.batches), "--epochs", str(args.epochs), "--params", *(params or args.params),
           "--torch-threads", str(threads), "--device", device, *extra, *(["--synthetic"] if args.synthetic else [])]
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{row} ({src}, {draw}): {out.stderr.strip().splitlines()[-1]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def compare_table(results: list[dict], key: str, first) -> str:
    """A Markdown table of the same rows at several values of ``key`` (torch ``threads``, ``device``), with the
    speed against the value ``first`` and the first mini-batch's loss."""
    label = {"threads": "torch threads", "device": "device"}[key]
    out = [f"| row | {label} | s / epoch | per second | speed against {first} | first-batch loss |",
           "|---|---|---|---|---|---|"]
    base = {r["row"]: r for r in results if r[key] == first}
    for r in results:
        out.append(f"| {r['row']} | {r[key]} | {r['epoch_seconds']:.2f} | {r['per_second']:.0f} {r['unit']} | "
                   f"{base[r['row']]['epoch_seconds'] / r['epoch_seconds']:.2f}x | {r['first_loss']:.6f} |")
    return "\n".join(out)


def table(results: list[dict]) -> str:
    """A Markdown table of the worker results, with the speed-up over ``before`` for the same row."""
    base = {r["row"]: r for r in results if r["impl"] == "before"}
    head = ("| row | implementation | samples | s / epoch | per second | speed-up | first-batch loss "
            "| FLOP share (step GFLOP/s of matmul GFLOP/s) | matmul MFLOP per context |")
    out = [head, "|" + "---|" * 9]
    for r in results:
        ref = base.get(r["row"])
        speed = f"{ref['epoch_seconds'] / r['epoch_seconds']:.1f}x" if ref else ""
        flops = (f"{r['flop_share']:.2f} ({r['step_gflops']:.1f} of {r['matmul_gflops']:.1f})"
                 if "flop_share" in r else "")
        work = f"{r['mflop_per_context']:.1f}" if "mflop_per_context" in r else ""
        out.append(f"| {r['row']} | {r['impl']} | {r['draw']} | {r['epoch_seconds']:.1f} | "
                   f"{r['per_second']:.0f} {r['unit']} | {speed} | {r['first_loss']:.6f} | {flops} | {work} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()

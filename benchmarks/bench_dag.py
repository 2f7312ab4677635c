"""Building the Snakemake DAG: ``snakemake -n`` wall and CPU seconds, this checkout beside another.

    python benchmarks/bench_dag.py --baseline ../srdiv-before [--repeats 3] [--config config/main.yaml]

Each repeat runs ``snakemake -n --configfile params.yaml CONFIG...`` once in each checkout's root (``PYTHONPATH``
= its ``src``), one after the other. CPU seconds are user + system of the process and its children, with
the wall seconds, from GNU time (``/usr/bin/time``). A checkout whose Snakefile checks the rows against the
registries while it builds the DAG and keeps that check in ``.snakemake/srdiv-rows.json`` (its
``srdiv.train.rows.checked_rows``, before the check moved to ``srdiv check-rows`` at a run's start) is timed
twice: ``checked`` with the file removed before each run (the models and torch imported, as after an edit of
the code or the setting) and ``kept`` with it there; any other checkout once, ``checked`` (a DAG that checks
the rows each time) or ``none`` (a DAG built without the check). One more run per checkout and kind, untimed,
with ``PYTHONPROFILEIMPORTTIME`` says whether torch was imported.

Medians of the repeats, the load average before and after (the machine may be shared), the CPU named.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from srdiv.provenance import cpu_name

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MEMO = Path(".snakemake") / "srdiv-rows.json"


def row_check(checkout: Path) -> str:
    """How the checkout's Snakefile checks the rows as it builds the DAG: ``kept`` (the answer kept in :data:`MEMO`),
    ``checked`` (each time) or ``none`` (not there: a run checks them as it starts)."""
    common = checkout / "workflow" / "rules" / "common.smk"
    text = common.read_text() if common.is_file() else ""
    return "kept" if "checked_rows(" in text else "checked" if "check_rows(" in text else "none"


def dry_run(checkout: Path, configs: list[str], env: dict, prefix: list[str] = ()) -> subprocess.CompletedProcess:
    """``snakemake -n`` of the setting in ``checkout`` (after ``prefix``); fails loudly when the DAG does not build."""
    done = subprocess.run([*prefix, str(BIN / "snakemake"), "-n", "--configfile", "params.yaml", *configs],
                          cwd=checkout, capture_output=True, text=True, env={**os.environ, **env,
                                                                              "PYTHONPATH": str(checkout / "src")})
    if done.returncode:
        sys.exit(f"snakemake -n failed in {checkout}:\n{done.stderr[-2000:]}")
    return done


def timed(checkout: Path, configs: list[str], cold: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``snakemake -n``; ``cold``: without the kept row check."""
    if cold:
        (checkout / MEMO).unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("r") as out:
        dry_run(checkout, configs, {}, ["/usr/bin/time", "-f", "%e %U %S", "-o", out.name])
        wall, user, system = (float(x) for x in out.read().split()[-3:])
    return wall, user + system


def imports_torch(checkout: Path, configs: list[str], cold: bool) -> bool:
    """Whether one ``snakemake -n`` in ``checkout`` imports torch (``-X importtime``'s lines)."""
    if cold:
        (checkout / MEMO).unlink(missing_ok=True)
    lines = dry_run(checkout, configs, {"PYTHONPROFILEIMPORTTIME": "1"}).stderr.splitlines()
    return any(line.startswith("import time:") and line.split("|")[-1].strip() == "torch" for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="Root of the other checkout.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", nargs="+", default=["config/main.yaml"], help="Overlays after params.yaml.")
    args = parser.parse_args()
    checkouts = {"baseline": args.baseline.resolve(), "this": ROOT}
    kinds = [(name, cold) for name, path in checkouts.items()
             for cold in ([True, False] if row_check(path) == "kept" else [True])]
    load = [os.getloadavg()[0]]
    times = {kind: [] for kind in kinds}
    for _ in range(args.repeats):
        for name, cold in kinds:
            times[(name, cold)].append(timed(checkouts[name], args.config, cold))
    load.append(os.getloadavg()[0])
    print(f"snakemake -n --configfile params.yaml {' '.join(args.config)}: medians of {args.repeats}, "
          f"{cpu_name()}, {os.cpu_count()} cores, load average {load[0]:.1f} before, {load[1]:.1f} after")
    print("| checkout | row check | wall s | CPU s | torch imported |")
    print("|---|---|---:|---:|---|")
    for name, cold in kinds:
        wall = statistics.median(t[0] for t in times[(name, cold)])
        cpu = statistics.median(t[1] for t in times[(name, cold)])
        check = row_check(checkouts[name])
        label = ("checked" if cold else "kept") if check == "kept" else check
        print(f"| {name} | {label} | {wall:.2f} | {cpu:.2f} | {imports_torch(checkouts[name], args.config, cold)} |")


if __name__ == "__main__":
    main()

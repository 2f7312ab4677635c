"""`dvc status` of one pipeline, summarised: which stages are stale and why, in a few lines.

    python workflow/scripts/dvc_status.py [dvc.yaml | pipelines/<name>/dvc.yaml]      (make dvc-status)

A bare ``dvc status`` reads every pipeline of the repository (the main table's and each study's) and prints
each changed file of each stage. This asks DVC for one pipeline's status (``Repo.status`` with that
``dvc.yaml`` as target, as ``dvc status dvc.yaml`` does) and groups its stages by the reasons they are
stale: changed code or data they read (the paths), changed params (the keys), outputs missing from the
workspace (a fresh clone: ``dvc pull`` from a remote, or ``dvc repro``) or changed since the lock. Exit 0
whether or not stages are stale (as ``dvc status``); 2 when the pipeline file is missing.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

SHOWN = 4
"""Stage names and paths shown per group before "(+N more)"."""


def _names(items: list[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _made_here(path: str, outs: set[str]) -> bool:
    """Whether ``path`` is an output of a stage of the pipeline, or a directory of such outputs, or in one."""
    return any(path == out or out.startswith(path + "/") or path.startswith(out + "/") for out in outs)


def reasons(entries: list, outs: set[str]) -> tuple[str, ...]:
    """One stage's ``dvc status`` entries as short reasons: ``code or data modified: a, b``, ``params
    changed: params.yaml:train``, ``inputs from stages above missing`` (a changed dep that a stage of the
    pipeline makes: ``outs``), ``outputs missing``, ``outputs modified``, ``changed command``."""
    found: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        if isinstance(entry, str):                  # "always changed"
            found[entry].add("")
            continue
        for kind, changes in entry.items():
            if kind == "changed deps":
                for path, state in changes.items():
                    if isinstance(state, dict):     # a params file: {key: state}
                        found["params changed"].update(f"{path}:{key}" for key in state)
                    elif _made_here(path, outs):
                        found[f"inputs from stages above {'missing' if state == 'deleted' else state}"].add("")
                    else:
                        found[f"code or data {state}"].add(path)
            elif kind == "changed outs":
                for state in changes.values():
                    found["outputs missing" if state in ("deleted", "not in cache") else f"outputs {state}"].add("")
            else:                                   # changed command, changed checksum
                found[kind].add("")
    return tuple(f"{kind}: {_names(sorted(paths))}" if paths - {""} else kind for kind, paths in sorted(found.items()))


def _stages(names: list[str]) -> str:
    """Stage names by their group (``train@DSSA-1`` and ``train@DSSA-2``: ``train (2)``)."""
    groups: dict[str, int] = defaultdict(int)
    for name in names:
        groups[name.split(":")[-1].split("@")[0]] += 1
    return _names([f"{group} ({count})" if count > 1 else group for group, count in groups.items()])


def summary(pipeline: str, status: dict, total: int, outs: set[str] = frozenset()) -> list[str]:
    """The lines printed for ``status`` (``Repo.status``'s answer) of ``total`` stages whose outputs are
    ``outs`` (paths as the stages name them)."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for stage, entries in status.items():
        groups[reasons(entries, outs)].append(stage)
    lines = [f"{pipeline}: {total} stages, {len(status)} stale, {total - len(status)} up to date"]
    for why, stages in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"  {len(stages)} stale ({'; '.join(why)}): {_stages(stages)}")
    if any("outputs missing" in why for why in groups):
        lines.append("  outputs missing: `dvc pull` brings them from a remote (make dvc-remote), `dvc repro` builds them")
    return lines


def main(argv: list[str]) -> int:
    from dvc.repo import Repo

    pipeline = argv[0] if argv else "dvc.yaml"
    if not Path(pipeline).is_file():
        print(f"{pipeline}: no such pipeline file", file=sys.stderr)
        return 2
    with Repo(".") as repo:
        stages = repo.stage.collect(pipeline)
        outs = {out.def_path for stage in stages for out in stage.outs}
        status = repo.status(targets=[pipeline])
    print("\n".join(summary(pipeline, status, len(stages), outs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

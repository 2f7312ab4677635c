"""Shared test setup: the repository's paths (import them: ``from conftest import ROOT``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository: params.yaml, config/, data/, the Snakefile."""

BIN = Path(sys.executable).parent
"""The virtual environment's scripts: srdiv, snakemake, dvc."""

FIXTURES = ROOT / "tests" / "fixtures"
"""Small vendored inputs: a TREC Web Track slice, a WordNet slice, a DSSA-release sample."""

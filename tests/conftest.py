"""Shared test setup: the fixtures that more than one module reads, built once per session (the paths and
markers modules import are in ``helpers.py``).

The session fixtures hand every module the same objects: a test may read them, never change them in place
(copy first).
"""

import signal
import warnings

import pytest
import torch

from helpers import DSSA_SAMPLE, TREC_WEB

# The test process computes on one thread (its children keep torch's default): the tests' tensors are tiny, so a
# second thread only waits on the first, many times slower on a busy machine; and `make test` runs one pytest-xdist
# worker per core.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _process_state():
    """Tests that call ``srdiv.cli.main.main`` in-process install its SIGINT/SIGTERM handlers and may set torch's
    threads (``srdiv train --threads``); restore both after each test so that no later test (or the worker
    processes it forks) inherits them."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    threads = torch.get_num_threads()
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def trec_web():
    """``(collection, notes)`` built from the vendored TREC Web Track files (test_trec_web, test_metrics)."""
    from srdiv.collection.trec_web import build_trec_web

    return build_trec_web(TREC_WEB)


@pytest.fixture(scope="session")
def dssa_sample():
    """The collection of the DSSA-release sample (test_dssa_import, test_release_rows)."""
    from srdiv.collection.schema import load_collection

    return load_collection(DSSA_SAMPLE / "collection")


@pytest.fixture(scope="session")
def dssa_release(dssa_sample):
    """``(docs, pseudo, rel)``: the sample's vectors and relevance features as srdiv imports them."""
    from srdiv.features.dssa_import import import_release

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # level-2 suggestions absent from the release
        return import_release(dssa_sample, DSSA_SAMPLE)

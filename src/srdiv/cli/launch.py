"""The ``srdiv`` program's entry point: Ctrl-C and SIGTERM are answered from its first instant.

The commands import heavy libraries (typer, pandas, torch) when :mod:`srdiv.cli.main` is imported; a
signal during those seconds must end the program as one during a command does (one line, exit 130
or 143), so this module imports nothing of srdiv's but :mod:`srdiv.cli.interrupts` before it has set
the handlers. Imported by the program (``srdiv``), its first lines set handlers that end it at once with
that line and code (:func:`srdiv.cli.interrupts.stop_now`: nothing is written yet); :func:`main` then sets those
that let a command clean up. It also chooses OpenBLAS's kernels (:func:`pin_blas_kernel`), which must
happen before numpy is first imported.
``srdiv evaluate QRELS RUN [MEASURES...]`` goes straight to :mod:`srdiv.metrics.evaluate_files` (numpy
alone, no typer, pandas or pyarrow), so that it starts as fast as the tools it stands beside; any other form
of it goes to :mod:`srdiv.cli.main`.
"""

from __future__ import annotations

import _signal  # signal's C half: it imports nothing, so the handlers are set before anything else is read
import sys

from srdiv.cli.interrupts import stop_now

if sys.argv[0].rpartition("/")[2] == "srdiv":      # the program, not a library import: answer from here on
    _signal.signal(_signal.SIGTERM, stop_now)
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:   # not ignored (a background job)
        _signal.signal(_signal.SIGINT, stop_now)

import os  # noqa: E402  (after the handlers: each import is time a signal may arrive in)
import re  # noqa: E402
import signal  # noqa: E402
from pathlib import Path  # noqa: E402

from srdiv.cli.interrupts import Terminated, stopped, terminate  # noqa: E402

BLAS_KERNEL = "SkylakeX"
"""OpenBLAS's AVX-512 kernels, with which the committed tables' document vectors and features were built."""

AVX512 = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")
"""The instruction sets OpenBLAS's SkylakeX kernels use."""


def pin_blas_kernel(environ=os.environ, cpuinfo: Path = Path("/proc/cpuinfo")) -> None:
    """Set ``OPENBLAS_CORETYPE`` to :data:`BLAS_KERNEL` where the CPU has :data:`AVX512` and the user chose none.

    OpenBLAS (numpy, scipy, gensim) otherwise picks its kernels by CPU model, and the kernel decides the
    last bits of the doc2vec, LDA and SVD vectors: an AMD EPYC left to its own choice (Haswell) builds other
    LDA topics, and so other diversity features, than the committed ``dvc.lock`` records; with these kernels
    it builds the same bytes as the Intel Xeon that made them. A CPU without AVX-512 keeps OpenBLAS's choice.
    """
    if "OPENBLAS_CORETYPE" in environ:
        return
    try:
        flags = re.search(r"^flags\s*:(.*)$", cpuinfo.read_text(), re.MULTILINE)
    except OSError:
        return
    if flags and set(AVX512) <= set(flags.group(1).split()):
        environ["OPENBLAS_CORETYPE"] = BLAS_KERNEL


def main() -> None:
    """Set the signal handlers and the BLAS kernel, then import and run the command line
    (:func:`srdiv.cli.main.main`)."""
    signal.signal(signal.SIGTERM, terminate)
    if signal.getsignal(signal.SIGINT) is stop_now:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        pin_blas_kernel()
        if sys.argv[1:2] == ["evaluate"]:       # its plain form without typer, pandas or pyarrow
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")    # one thread: no pool to start (30 ms)
            from srdiv.metrics.evaluate_files import main as evaluate

            if evaluate(sys.argv[2:]):
                return
        from srdiv.cli.main import main as run
        run()           # answers the signals itself; these catch one between its steps
    except KeyboardInterrupt:
        stopped(130)
    except Terminated:
        stopped(143)

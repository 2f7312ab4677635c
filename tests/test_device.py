"""Device discipline without a GPU: every model row trains and ranks while a tensor made without ``device=`` fails.

On a GPU, a tensor that srdiv code creates without an explicit device lands on
the CPU and meets the model's CUDA tensors: a crash, or a silent copy per call.
CI has no GPU, so these tests make the same mistake fail on the CPU:

* the model, its prior and the batches are built first, as the harness builds
  them (parameters are created without a device and moved by ``.to(device)``);
* then one training epoch of its objective (:class:`~srdiv.train.trainer.Trainer`,
  a single optimisation step on this tiny bundle) and the ranking of a batch
  (:func:`~srdiv.train.ranking.rank_bundle`) run under :class:`DeviceGuard`:
  a torch factory (``torch.arange``, ``torch.zeros``, ``torch.tensor``,
  ``torch.as_tensor``, ...) called from srdiv code without ``device=`` raises
  :class:`ImplicitDevice` naming the file and line; one called inside torch on
  srdiv's behalf (a helper whose ``device`` defaults to None) makes a tensor on
  the ``meta`` device, which fails as soon as it meets a real tensor.

Why not simply ``torch.set_default_device("meta")``: a meta index tensor is
silently accepted by CPU indexing, ``gather`` and ``index_select`` (which do
fail on CUDA with a CPU index), and torch's own optimisers keep their step
counters on the CPU by design (``torch.optim`` is left alone here too).

Every row of ``params.yaml`` is covered (the first point of its tuning grid,
rows that differ only in the bundle they read counted once), and every model
and objective srdiv registers must appear in some row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import srdiv
from srdiv.features.bundle import random_bundle
from srdiv.params import load_params
from srdiv.registry import MODELS, OBJECTIVES
from srdiv.sampling.samples import SampleSettings, make_samples
from srdiv.train.config import model_rows, model_spec
from srdiv.train.job import build_model, import_plugins, lookup
from srdiv.train.ranking import rank_bundle
from srdiv.train.trainer import Trainer, trainable

ROOT = Path(__file__).resolve().parents[1]
PARAMS = load_params(ROOT / "params.yaml")
SRC = str(Path(srdiv.__file__).resolve().parent)
TORCH = str(Path(torch.__file__).resolve().parent)
OPTIM = str(Path(torch.optim.__file__).resolve().parent)
EMB = 8  # vector size of the test bundle ("dot" attention needs the DSSA hidden size equal to it)

FACTORIES = {getattr(torch, name) for name in (
    "arange", "range", "as_tensor", "asarray", "tensor", "scalar_tensor", "zeros", "ones", "full", "empty",
    "empty_strided", "eye", "rand", "randn", "randint", "randperm", "linspace", "logspace", "tril_indices",
    "triu_indices", "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
) if hasattr(torch, name)}


class ImplicitDevice(AssertionError):
    """srdiv code created a tensor without ``device=``."""


class DeviceGuard(TorchFunctionMode):
    """Torch factories without ``device=``: an error from code under ``roots``, a meta tensor from torch's helpers."""

    def __init__(self, roots: tuple[str, ...] = (SRC,)):
        super().__init__()
        self.roots = roots

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            caller = sys._getframe(1)
            where = caller.f_code.co_filename
            if where.startswith(self.roots):
                raise ImplicitDevice(f"{_short(where)}:{caller.f_lineno}: "
                                     f"torch.{func.__name__}(...) without device= (pass the device of an input "
                                     f"tensor, e.g. device=mask.device)")
            if not _inside(caller, OPTIM):
                kwargs = {**kwargs, "device": "meta"}
        return func(*args, **kwargs)


def _short(path: str) -> str:
    return str(Path(path).relative_to(ROOT)) if path.startswith(str(ROOT)) else path


def _inside(frame, folder: str) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith(folder):
            return True
        frame = frame.f_back
    return False


def _stray_tensors(model: torch.nn.Module) -> list[str]:
    """Tensors kept as plain attributes: ``model.to(device)`` does not move them (register a buffer instead)."""
    return [f"{name or type(model).__name__}.{attr}" for name, module in model.named_modules()
            for attr, value in vars(module).items() if isinstance(value, torch.Tensor)]


# --- the cases: params.yaml rows ---------------------------------------------------------------------------

def _case(row: str) -> dict:
    """The row at the first point of its tuning grid, with test-sized training settings."""
    spec = model_spec(PARAMS, row)
    spec = spec.at(spec.grid()[0])
    params = dict(spec.params)
    if params.get("attention") == "dot" or params.get("similarity") == "dot":
        params["hidden"] = EMB
    return {"row": row, "model": spec.model, "objective": spec.objective, "params": params,
            "objective_params": spec.objective_params, "optim": spec.optim}


def _cases() -> list[dict]:
    seen, cases = set(), []
    for row in model_rows(PARAMS):
        case = _case(row)
        key = repr({k: v for k, v in case.items() if k != "row"})
        if key not in seen:  # e.g. R-LTR-NTN-LDA differs from R-LTR-NTN only in its bundle
            seen.add(key)
            cases.append(case)
    return cases


CASES = _cases()
XFAIL: dict[str, str] = {}


def _param(case: dict):
    marks = [pytest.mark.xfail(strict=True, raises=ImplicitDevice, reason=XFAIL[case["model"]])] \
        if case["model"] in XFAIL else []
    return pytest.param(case, id=case["row"], marks=marks)


@pytest.fixture(scope="module")
def data():
    bundle = random_bundle(queries=4, docs=8, emb=EMB, seed=3)
    samples = make_samples(bundle, SampleSettings(permutations=2), 0)
    return bundle, samples


def _build(case: dict, bundle):
    spec = model_spec({"models": {case["row"]: {k: case[k] for k in ("model", "params")}}}, case["row"])
    prior = None
    if spec.prior:
        prior_spec = model_spec(PARAMS, spec.prior)
        torch.manual_seed(1)
        prior = build_model(prior_spec, bundle.dims).requires_grad_(False).eval()
    torch.manual_seed(0)
    return build_model(spec, bundle.dims, prior)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_training_and_ranking_create_every_tensor_on_the_input_device(case, data):
    bundle, samples = data
    device = torch.device("cpu")
    model = _build(case, bundle).to(device)
    assert _stray_tensors(model) == []
    trains = case["objective"] is not None and trainable(model)
    if trains:
        objective = lookup(OBJECTIVES, case["objective"])(**case["objective_params"])
        objective.samples = samples
        settings = model_spec({"train": {"epochs": 1, "batch_size": len(bundle)},
                               "models": {"M": {"model": "x"}}}, "M").train
        trainer = Trainer(settings, case["optim"], device, seed=0, progress=False)
        before = {k: v.clone() for k, v in model.state_dict().items()}
    with DeviceGuard():
        if trains:
            fit = trainer.fit(model, objective, bundle, lambda m: float(rank_bundle(m, bundle, device).sum()))
        orders = rank_bundle(model, bundle, device, batch_size=3)
    if trains:
        assert len(fit.curve) == 1 and np.isfinite(fit.curve["loss"]).all()
        assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # a step was taken
    assert orders.shape == bundle.doc_mask.shape
    assert ((orders >= 0) == bundle.doc_mask).all()


def test_every_registered_model_and_objective_has_a_case():
    import_plugins()
    ours = lambda registry: {n for n in registry.names()  # noqa: E731  (not the test files' own models)
                             if registry.get(n).__module__.startswith("srdiv.")}
    assert ours(MODELS) - {c["model"] for c in CASES} == set()
    assert ours(OBJECTIVES) - {c["objective"] for c in CASES} == set()


def test_the_guard_catches_a_tensor_without_a_device():
    mask = torch.ones(2, 3, dtype=torch.bool)
    with DeviceGuard((__file__,)):
        assert torch.arange(3, device=mask.device).device == mask.device
        with pytest.raises(ImplicitDevice, match=r"test_device\.py:\d+: torch\.arange"):
            torch.arange(3)

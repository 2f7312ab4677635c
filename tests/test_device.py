"""Device discipline: every model row trains and ranks while a tensor made without ``device=`` fails.

On a GPU, a tensor that srdiv code creates without an explicit device lands on
the CPU and meets the model's CUDA tensors: a crash, or a host-to-device copy
on every call. CI has no GPU, so these tests make the same mistake fail on the CPU:

* the model (with its frozen prior) and the bundle are built first, as the
  harness builds them: parameters are made without a device and moved by
  ``model.to(device)``, which must leave no tensor behind (:func:`_stray_tensors`);
* then one training epoch of the row's objective (the real
  :class:`~srdiv.train.trainer.Trainer`; one optimisation step on this tiny
  bundle, validation included) and the ranking of the bundle in batches
  (:func:`~srdiv.models.ranking.rank_bundle`) run under :class:`DeviceGuard`:
  a torch factory (``torch.arange``, ``torch.zeros``, ``torch.tensor``,
  ``torch.as_tensor``, ...) called from srdiv code without ``device=`` raises
  :class:`ImplicitDevice` naming the file and line; one called inside a torch
  helper on srdiv's behalf (a ``device=None`` default) makes a ``meta`` tensor,
  which fails as soon as it meets a real one.

Why not only ``torch.set_default_device("meta")``: CPU indexing, ``gather``
and ``index_select`` silently accept a meta index tensor (CUDA ones reject a
CPU index), the raised error would not say where the tensor was made, and
torch's optimisers keep their step counters on the CPU by design (calls under
``torch.optim`` are left alone, and so is code run by an import).

Covered: every row of ``params.yaml`` at the first point of its tuning grid
(rows that differ only in the bundle they read, e.g. the ``-LDA`` ones, once);
every model and objective srdiv registers must appear in a row.

Where torch sees a CUDA device, the same cases also run there for real, and each
model must rank the bundle alike on the CPU and on the GPU; without one (CI) those
cases are skipped.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import srdiv
from srdiv.experiment import ModelSpec, TrainSettings, model_rows, model_spec
from srdiv.features.bundle import random_bundle
from srdiv.models.ranking import rank_bundle
from srdiv.params import load_params
from srdiv.registry import MODELS, OBJECTIVES
from srdiv.sampling.samples import SampleSettings, make_samples
from srdiv.train.trained import build_model
from srdiv.train.trainer import Trainer, trainable
from helpers import DEVICES, ROOT, needs_cuda

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
"""Torch functions that make a new tensor on the default device unless given ``device=``."""


class ImplicitDevice(AssertionError):
    """srdiv code created a tensor without ``device=``."""


class DeviceGuard(TorchFunctionMode):
    """Factories without ``device=``: an error when called from code under ``roots``, a meta tensor when called
    inside torch on that code's behalf (not from ``torch.optim``, not while importing)."""

    def __init__(self, roots: tuple[str, ...] = (SRC,)):
        super().__init__()
        self.roots = roots

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            caller = sys._getframe(1)
            path = caller.f_code.co_filename
            if path.startswith(self.roots):
                raise ImplicitDevice(f"{_short(path)}:{caller.f_lineno}: torch.{func.__name__}(...) without "
                                     f"device= (pass the device of an input tensor, e.g. device=mask.device)")
            if self._on_behalf_of_roots(caller):
                kwargs = {**kwargs, "device": "meta"}
        return func(*args, **kwargs)

    def _on_behalf_of_roots(self, frame) -> bool:
        """Whether ``frame`` is torch code called (through torch only, not ``torch.optim``) by code under ``roots``."""
        while frame is not None and frame.f_code.co_filename.startswith(TORCH):
            if frame.f_code.co_filename.startswith(OPTIM):
                return False
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(self.roots)


def _short(path: str) -> str:
    return str(Path(path).relative_to(ROOT)) if path.startswith(str(ROOT)) else path


def _stray_tensors(model: torch.nn.Module) -> list[str]:
    """Tensors kept as plain attributes: ``model.to(device)`` does not move them (register a buffer instead)."""
    return [f"{name or type(model).__name__}.{attr}" for name, module in model.named_modules()
            for attr, value in vars(module).items() if isinstance(value, torch.Tensor)]


# --- the cases: rows of params.yaml ------------------------------------------------------------------------

def _case(row: str) -> dict:
    """The row at the first corner of its search space (each range's low end, each list's first value)."""
    spec = model_spec(PARAMS, row)
    spec = spec.at(spec.corners()[0])
    model = spec.model
    if model.args.get("attention") == "dot":
        model = replace(model, args={**model.args, "hidden": EMB})
    return {"row": row, "model": model, "objective": spec.objective, "optim": spec.optim}


def _cases() -> list[dict]:
    seen, cases = set(), []
    for row in model_rows(PARAMS):
        case = _case(row)
        key = repr({k: v for k, v in case.items() if k != "row"})
        if key not in seen:
            seen.add(key)
            cases.append(case)
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def data():
    bundle = random_bundle(queries=4, docs=8, emb=EMB, seed=3)
    settings = SampleSettings.from_params(PARAMS)     # the pipeline's draw of list-pairwise samples
    return bundle, make_samples(bundle, replace(settings, permutations=2), 0)


def _build(case: dict, bundle):
    """The model of ``case`` as the harness builds it, with a frozen, randomly initialised prior when it has one."""
    spec = ModelSpec(case["row"], case["model"])
    prior = None
    if spec.prior:
        torch.manual_seed(1)
        prior = build_model(model_spec(PARAMS, spec.prior), bundle.dims).requires_grad_(False).eval()
    torch.manual_seed(0)
    return build_model(spec, bundle.dims, prior)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c["row"]) for c in CASES])
def test_training_and_ranking_make_every_tensor_on_the_input_device(case, device, data):
    bundle, samples = data
    device = torch.device(device)
    model = _build(case, bundle).to(device)
    assert _stray_tensors(model) == []
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} <= {device.type}
    trains = case["objective"] is not None and trainable(model)
    if trains:
        objective = OBJECTIVES.get(case["objective"].name)(**case["objective"].args)
        objective.samples = samples
        settings = TrainSettings(epochs=1, batch_size=len(bundle))
        trainer = Trainer(settings, case["optim"], device, seed=0, progress=False)
        before = {k: v.clone() for k, v in model.state_dict().items()}
    with DeviceGuard():
        if trains:
            fit = trainer.fit(model, objective, bundle, lambda m: float(rank_bundle(m, bundle, device)[:, 0].sum()))
        orders = rank_bundle(model, bundle, device, batch_size=3)
    if trains:
        assert len(fit.curve) == 1 and np.isfinite(fit.curve["loss"]).all()
        assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # a step was taken
    assert ((orders >= 0) == bundle.doc_mask).all()


@needs_cuda
@pytest.mark.parametrize("case", [pytest.param(c, id=c["row"]) for c in CASES])
def test_a_model_ranks_alike_on_the_cpu_and_the_gpu(case, data):
    bundle, _ = data
    on_cpu = rank_bundle(_build(case, bundle), bundle, torch.device("cpu"))
    on_gpu = rank_bundle(_build(case, bundle).to("cuda"), bundle, torch.device("cuda"))
    np.testing.assert_array_equal(on_gpu, on_cpu)


def test_every_registered_model_and_objective_has_a_case():
    ours = lambda registry: {n for n in registry.names()  # noqa: E731  (the test files register their own too)
                             if registry.get(n).__module__.startswith("srdiv.")}
    assert ours(MODELS) - {c["model"].name for c in CASES} == set()
    assert ours(OBJECTIVES) - {c["objective"].name for c in CASES if c["objective"]} == set()


def test_the_guard_names_a_tensor_made_without_a_device():
    mask = torch.ones(2, 3, dtype=torch.bool)
    with DeviceGuard((__file__,)):  # this file plays srdiv's part
        assert torch.arange(3, device=mask.device).device == mask.device
        with pytest.raises(ImplicitDevice, match=r"test_device\.py:\d+: torch\.arange\(\.\.\.\) without device="):
            torch.arange(3)
        # a torch helper with a device=None default, called from "srdiv", makes a meta tensor that cannot mix
        causal = torch.nn.Transformer.generate_square_subsequent_mask(3)
        assert causal.device.type == "meta"
        with pytest.raises(RuntimeError, match="meta"):
            mask.float() + causal[0]
    with DeviceGuard(("/nowhere",)):  # called on behalf of other code, the helper keeps torch's default
        assert torch.nn.Transformer.generate_square_subsequent_mask(3).device == mask.device


def test_a_tensor_kept_as_a_plain_attribute_is_a_stray():
    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 1)
            self.register_buffer("ok", torch.zeros(2))
            self.linear.stray = torch.arange(2)  # model.to(device) would leave it on the CPU

    assert _stray_tensors(Holder()) == ["linear.stray"]

"""A trained model as ``model.pt`` holds it (:class:`Trained`), and the model a row's spec builds
(:func:`build_model`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

import srdiv.models  # noqa: F401  (registers every model)
from srdiv.experiment import ModelSpec
from srdiv.features.bundle import BundleDims, FeatureScaler
from srdiv.io import InputError, existing_file, load_torch, save_torch, verify
from srdiv.models.base import DiversityModel
from srdiv.registry import MODELS
from srdiv.train.records import check_identity, identity, read_record

MODEL_FILE = "model.pt"


def build_model(spec: ModelSpec, dims: BundleDims, prior: DiversityModel | None = None) -> DiversityModel:
    """``Cls(dims, **args)`` of the spec's model, with ``args['prior']`` replaced by the ``prior`` model."""
    args = dict(spec.model.args)
    if "prior" in args:
        if prior is None:
            raise InputError("--prior", f"model row {spec.row} needs its prior '{args['prior']}' "
                                        "(srdiv train --prior DIR)")
        args["prior"] = prior
    return MODELS.get(spec.model.name)(dims, **args)


@dataclass
class Trained:
    """A trained model as saved in ``model.pt``: spec (at the chosen point), sizes, weights, scaler."""

    spec: ModelSpec
    dims: BundleDims
    state: dict
    scaler: FeatureScaler
    prior: Trained | None = None
    record: dict | None = None
    """What the model is (:data:`srdiv.train.records.IDENTITY`: row, fold, fingerprints of its settings,
    bundle and training data); None only for a model not trained by :func:`run_job`."""

    def to_dict(self) -> dict:
        return {"spec": json.dumps(self.spec.to_dict()), "dims": asdict(self.dims), "state": self.state,
                "scaler": {k: torch.as_tensor(v) for k, v in asdict(self.scaler).items()},
                "prior": self.prior.to_dict() if self.prior else None, "record": json.dumps(self.record)}

    @classmethod
    def from_dict(cls, saved: dict) -> Trained:
        spec = ModelSpec.from_dict(json.loads(saved["spec"]))
        scaler = FeatureScaler(**{k: v.numpy() for k, v in saved["scaler"].items()})
        prior = cls.from_dict(saved["prior"]) if saved["prior"] else None
        record = json.loads(saved["record"]) if "record" in saved else None
        return cls(spec, BundleDims(**saved["dims"]), saved["state"], scaler, prior, record)

    def build(self, device: torch.device | str = "cpu") -> DiversityModel:
        """The model with its weights, frozen, in eval mode, on ``device``."""
        prior = self.prior.build(device) if self.prior else None
        model = build_model(self.spec, self.dims, prior)
        model.load_state_dict(self.state)
        return model.requires_grad_(False).eval().to(device)

    def save(self, path: str | Path) -> None:
        save_torch(self.to_dict(), path)

    def check_registered(self, where: str | Path) -> None:
        """The model of this row (and of its prior) is registered in this process; else one :class:`InputError`
        naming the model, its row and how to register it (a user's model trained with an ``import:`` list)."""
        trained: Trained | None = self
        while trained is not None:
            name = trained.spec.model.name
            if name not in MODELS.names():
                raise InputError(where, f"row {trained.spec.row}'s model '{name}' is not registered in this process: "
                                        "import the module that registers it first, as srdiv's commands do for an "
                                        "overlay's import: list (srdiv.registry.import_components(['my_model.py'], "
                                        "'my script'), or `import my_package.my_model`)")
            trained = trained.prior

    @classmethod
    def load(cls, path: str | Path) -> Trained:
        """Read ``path`` (``model.pt``, or a job directory holding one)."""
        path = existing_file(path, MODEL_FILE, "trained model")
        saved = load_torch(path, "trained model (model.pt of srdiv train)")
        try:
            trained = cls.from_dict(saved)
            trained.check_registered(path)
            trained.build()      # a model or argument unknown, weights missing or of other shapes (made by hand)
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
            reason = " ".join(str(err.args[0] if isinstance(err, KeyError) and err.args else err).split())
            raise InputError(path, f"not a model.pt of srdiv train ({type(err).__name__}: {reason[:300]})") from None
        bad = trained.non_finite()
        if bad:
            raise InputError(path, f"the model's {bad} holds values that are not finite (NaN or infinite)")
        verify(path, "trained model")
        record = check_identity(path, trained.record)
        if (path.parent / "hparams.json").is_file() and \
                identity(read_record(path.parent / "hparams.json")) != identity(record):
            raise InputError(path, f"a model of row {record['row']} fold {record['fold']} other than "
                                   "the one its directory's hparams.json records (copied from another job?)")
        return trained

    def non_finite(self) -> str | None:
        """The name of the first weight (or scaler array) of this model or its prior that is not all finite."""
        arrays = {**{f"weight '{k}'": v for k, v in self.state.items() if torch.is_tensor(v) and v.is_floating_point()},
                  **{f"feature scaler '{k}'": torch.as_tensor(v) for k, v in asdict(self.scaler).items()}}
        bad = next((name for name, v in arrays.items() if not torch.isfinite(v).all()), None)
        return bad or (f"prior's {self.prior.non_finite()}" if self.prior and self.prior.non_finite() else None)

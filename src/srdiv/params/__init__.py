"""``params.yaml``: the one configuration file, with optional overlay files.

Several files merge left to right (dicts recursively, everything else
replaced), so ``params.yaml`` + ``config/smoke.yaml`` is the smoke setting.
A key written ``name+`` extends the list ``name`` of the files before it
instead of replacing it (``run_models+: [MyModel]`` adds a row to the
setting's rows). Snakemake reads the same files, merged the same way
(``workflow/rules/common.smk``); DVC tracks the same keys.

Every file is checked against :data:`SCHEMA` when it is loaded, before any
work starts: an unknown key, a value of the wrong type or out of range is one
:class:`~srdiv.io.InputError` naming the file and the dotted key. A file's
``import:`` list names the modules of models and objectives from outside the
package, imported as it is loaded (:func:`srdiv.registry.import_components`).

Modules: :mod:`~srdiv.params.merging` (files merged, rows resolved), :mod:`~srdiv.params.schema` (what a file
may hold), :mod:`~srdiv.params.loading` (files read and checked); every public name is importable from
``srdiv.params``.
"""

from srdiv.params.loading import REFERENCE_NAME, load_params, read_yaml, section, setting_files
from srdiv.params.merging import (
                                  DATASET_DEFAULTS,
                                  EXTEND,
                                  dataset_settings,
                                  lineage,
                                  lookup,
                                  merge,
                                  model_row,
                                  model_rows,
)
from srdiv.params.schema import MEASURE_NAME, OPTIMIZERS, REPRESENTATIONS, SCHEMA, Check, validate

__all__ = [
    "DATASET_DEFAULTS", "EXTEND", "MEASURE_NAME", "OPTIMIZERS", "REFERENCE_NAME", "REPRESENTATIONS", "SCHEMA", "Check",
    "dataset_settings", "lineage", "load_params", "lookup", "merge", "model_row", "model_rows", "read_yaml", "section",
    "setting_files", "validate",
]

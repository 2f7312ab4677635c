"""One home for every setting: the built-in defaults equal ``params.yaml`` wherever both set a key.

A command run without ``--params`` (or with a file that leaves a key out) then computes what the
pipeline computes with ``params.yaml``.
"""

from dataclasses import fields
from pathlib import Path

import pytest

from srdiv.experiment import SearchSettings, TrainSettings
from srdiv.params import load_params
from srdiv.sampling.samples import SampleSettings
from srdiv.text.defaults import DEFAULTS, SETTINGS

PARAMS = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
WORKFLOW_ONLY = {("features", "diversity_vectors")}
"""Keys of a text section only the workflow reads (which vectors the diversity features use)."""


def leaves(tree: dict, prefix: tuple = ()) -> dict[tuple, object]:
    """``{(key, subkey, ...): value}`` of every non-mapping value in a nested dict."""
    out = {}
    for key, value in tree.items():
        out.update(leaves(value, (*prefix, key)) if isinstance(value, dict) else {(*prefix, key): value})
    return out


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_text_defaults_equal_params_yaml(name):
    built_in = leaves(DEFAULTS[name], (name,))
    in_file = {key: value for key, value in leaves(PARAMS[name], (name,)).items() if key not in WORKFLOW_ONLY}
    assert {key: built_in.get(key, "(no default)") for key in in_file} == in_file


@pytest.mark.parametrize("settings, name", [(TrainSettings, "train"), (SampleSettings, "samples"),
                                            (SearchSettings, "search")])
def test_dataclass_defaults_equal_params_yaml(settings, name):
    built_in = {f.name: f.default for f in fields(settings)}
    assert {key: built_in.get(key, "(no default)") for key in PARAMS[name]} == PARAMS[name]


def test_leaves_reads_nested_sections():
    assert leaves({"a": {"b": 1, "c": {"d": None}}, "e": [1]}) == {("a", "b"): 1, ("a", "c", "d"): None, ("e",): [1]}


def test_the_schema_and_the_specs_know_the_same_row_and_train_keys():
    from srdiv.experiment import ModelSpec
    from srdiv.params import SCHEMA

    row_keys = set(SCHEMA.keys["models"].items.keys)
    assert row_keys - {"extends", "samples"} == {f.name for f in fields(ModelSpec)} - {"row", "search"}
    assert set(SCHEMA.keys["train"].keys) == {f.name for f in fields(TrainSettings)}
    assert set(SCHEMA.keys["search"].keys) == {f.name for f in fields(SearchSettings)}
    assert set(SCHEMA.keys["samples"].keys) == {f.name for f in fields(SampleSettings)}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_schema_knows_the_text_settings_keys(name):
    """The schema checks the keys the settings classes define (and the workflow's own)."""
    from srdiv.params import SCHEMA

    def keys(check, prefix=()):
        inner = check.keys or {}
        return set().union(*(keys(c, (*prefix, k)) if c.keys else {(*prefix, k)} for k, c in inner.items()))

    assert keys(SCHEMA.keys[name], (name,)) - WORKFLOW_ONLY == set(leaves(DEFAULTS[name], (name,)))

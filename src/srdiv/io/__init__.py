"""Input errors and all-or-nothing output files shared by every stage.

One module per concern, every public name importable from ``srdiv.io``:

    errors      :class:`InputError`, the checks of values read (:func:`first_misfit`, :func:`check_keys`)
    manifest    what srdiv wrote (the manifest beside its outputs): :func:`claim`, :func:`verify`
    atomic      outputs replaced only on success: :func:`atomic_path`, :func:`atomic_set`, :func:`atomic_dir`
    readers     the one text-file reader: :func:`text_bytes`, :func:`text_lines`, :func:`normal_ids`
    loaders     JSON, tables and archives: :func:`read_json`, :func:`read_parquet`, :func:`load_npz`
"""

from srdiv.io.atomic import atomic_dir, atomic_path, atomic_set, check_output, save_torch, write_parquet, write_text
from srdiv.io.errors import InputError, check_finite, check_keys, first_misfit
from srdiv.io.loaders import existing_file, load_npz, load_torch, read_json, read_parquet, read_tsv
from srdiv.io.manifest import MANIFEST, TOOL_MARKS, claim, committed, digest, verify
from srdiv.io.readers import (
    BOM,
    HEADER_WORDS,
    LINE_END,
    TRAILING,
    check_utf8,
    integer_misfit,
    normal_id,
    normal_ids,
    read_text,
    refuse_header,
    text_bytes,
    text_lines,
)

__all__ = [
    "BOM", "HEADER_WORDS", "LINE_END", "MANIFEST", "TOOL_MARKS", "TRAILING", "InputError", "atomic_dir", "atomic_path",
    "atomic_set", "check_finite", "check_keys", "check_output", "check_utf8", "claim", "committed", "digest",
    "existing_file", "first_misfit", "integer_misfit", "load_npz", "load_torch", "normal_id", "normal_ids",
    "read_json", "read_parquet", "read_text", "read_tsv", "refuse_header", "save_torch", "text_bytes", "text_lines",
    "verify", "write_parquet", "write_text",
]

"""docs/findings.md's comparisons: A - B over the same queries, with the tables' paired t-test."""

import pandas as pd
import pytest
from scipy import stats

from srdiv.report.findings import compare


def _results(root, name, rows):
    frame = pd.DataFrame([{"model": row, "variant": "", "fold": 1, "qid": qid, "measure": "alpha_nDCG@20",
                           "value": value} for row, values in rows.items() for qid, value in values.items()])
    (root / name).mkdir()
    frame.to_parquet(root / name / "metrics.parquet")


def test_a_difference_and_its_paired_test_across_two_directories_of_one_collection(tmp_path):
    a, b = {"1": 0.5, "2": 0.7, "3": 0.9}, {"1": 0.4, "2": 0.7, "3": 0.6}
    _results(tmp_path, "main", {"X": b})
    _results(tmp_path, "study", {"X": a})
    row = compare([("study/X", "main/X")], results=tmp_path).splitlines()[2]
    p = stats.ttest_rel(list(a.values()), list(b.values())).pvalue
    assert row == f"| study/X - main/X | 0.700 | 0.567 | +0.133 | {p:.2g} | 3 |"


def test_rows_tested_on_other_queries_do_not_compare(tmp_path):
    _results(tmp_path, "one", {"X": {"1": 0.5, "2": 0.6}})
    _results(tmp_path, "two", {"X": {"1": 0.5, "3": 0.6}})
    with pytest.raises(SystemExit, match="not tested on the same queries"):
        compare([("one/X", "two/X")], results=tmp_path)
    with pytest.raises(SystemExit, match="no row 'Y'"):
        compare([("one/Y", "one/X")], results=tmp_path)
    same = compare([("one/X", "one/X")], results=tmp_path).splitlines()[2].split("|")
    assert float(same[4]) == 0 and float(same[5]) == 1     # identical rows: p = 1, as the tables say


def test_the_share_of_the_oracle_gain_a_row_reaches_with_realistic_aspects(tmp_path):
    from srdiv.report.findings import gain_shares

    _results(tmp_path, "main", {"Initial": {"1": 0.4, "2": 0.5}, "X": {"1": 0.5, "2": 0.6}, "Y": {"1": 0.3, "2": 0.5}})
    _results(tmp_path, "oracle", {"X": {"1": 0.6, "2": 0.7}, "Y": {"1": 0.4, "2": 0.4}})
    lines = gain_shares(["X", "Y"], "main", "oracle", results=tmp_path).splitlines()
    assert lines[2] == "| X | 0.450 | 0.550 | 0.650 | 0.50 |"        # (0.55 - 0.45) / (0.65 - 0.45)
    assert lines[3] == "| Y | 0.450 | 0.400 | 0.400 | (no oracle gain) |"

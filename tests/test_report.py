"""Report tables: means, bold, paired t-test markers, Holm, per-position, file formats."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from srdiv.io import InputError
from srdiv.metrics.stats import holm_adjust, paired_pvalues
from srdiv.params import load_params
from srdiv.report.builder import build_report, build_tables, params_hash
from srdiv.report.specs import GROUP_TITLES, run_specs
from helpers import ROOT, write_job

MEASURES = ["ERR_IA@20", "alpha_nDCG@20", "NRBP", "P_IA@20", "StRecall@20",
            "ERR_IA@5", "ERR_IA@10", "alpha_nDCG@5", "alpha_nDCG@10", "StRecall@5", "StRecall@10"]


def fake_metrics(seed=0, n=30):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, size=n)
    runs = {
        ("Initial", ""): base,
        ("xQuAD", ""): base + rng.normal(0.0, 0.05, n),          # not significant
        ("DSSA", ""): base + 0.1 + rng.normal(0, 0.01, n),        # clearly better
        ("DSSA", "dot"): base - 0.1 + rng.normal(0, 0.01, n),     # clearly worse
    }
    rows = []
    for (model, variant), vals in runs.items():
        for i, v in enumerate(vals):
            for m in MEASURES:
                rows.append((model, variant, i % 5 + 1, f"q{i}", m, float(v)))
    return pd.DataFrame(rows, columns=["model", "variant", "fold", "qid", "measure", "value"]), runs


PARAMS = {
    "models": {
        "Initial": {"group": "initial"},
        "xQuAD": {"group": "unsupervised"},
        "DSSA": {"group": "explicit"},
        "DSSA-dot": {"group": "explicit", "variant_of": "DSSA", "variant": "dot"},
    },
    "report": {"reference": "Initial", "ablations": {"dssa": {"title": "DSSA variants",
                                                               "runs": ["DSSA", "DSSA-dot"], "reference": "DSSA"}},
               "per_position": {"model": "DSSA", "baseline": "xQuAD"}},
}


def test_main_table_means_bold_and_markers():
    metrics, runs = fake_metrics()
    tables = build_tables(metrics, PARAMS)
    main = tables["main"]
    assert list(main.values.index) == ["Initial", "xQuAD", "DSSA"]          # variants stay out of main
    assert main.values.at["DSSA", "alpha_nDCG@20"] == pytest.approx(runs[("DSSA", "")].mean())
    assert main.bold.at["DSSA", "alpha_nDCG@20"] and not main.bold.at["Initial", "alpha_nDCG@20"]
    assert main.markers.at["DSSA", "alpha_nDCG@20"] == "▲"
    assert main.markers.at["xQuAD", "alpha_nDCG@20"] == ""
    assert main.groups == ["Initial ranking", "Unsupervised", "Supervised explicit"]
    abl = tables["ablation-dssa"]
    assert abl.markers.at["DSSA (dot)", "NRBP"] == "▼"


PAPER_GROUPS = {   # DSSA (TKDE Table 2, Section 6.1), DESA (CIKM Section 2.1), DALETOR (WWW Section 2)
    "initial": ["Initial"], "reference": ["Random", "Cosine"],
    "unsupervised": ["MMR", "xQuAD", "PM2", "HxQuAD", "HPM2"],
    "implicit": ["ListMLE", "R-LTR", "PAMM", "R-LTR-NTN", "PAMM-NTN", "MDP-DIV", "DALETOR"],
    "explicit": ["DSSA", "HDSSA", "DESA"],
}


def test_params_rows_are_grouped_as_the_papers_group_them():
    """Every row of params.yaml, variants by the model they vary, is in its paper's group, and the
    tables list the groups in the papers' order (implicit before explicit)."""
    params = load_params(ROOT / "params.yaml")
    specs = [s for s in run_specs(params) if s.group != "published"]
    paper = {model: group for group, models in PAPER_GROUPS.items() for model in models}
    assert {s.model for s in specs} == set(paper)
    assert {s.label: s.group for s in specs} == {s.label: paper[s.model] for s in specs}
    order = [list(GROUP_TITLES).index(s.group) for s in specs]
    assert order == sorted(order)
    rng = np.random.default_rng(0)
    main_rows = [s for s in specs if not s.variant]
    metrics = pd.DataFrame([(s.model, "", 1, f"q{i}", m, rng.random()) for s in main_rows for i in range(6)
                            for m in MEASURES], columns=["model", "variant", "fold", "qid", "measure", "value"])
    table = build_tables(metrics, params)["main"]
    titles = dict(zip(table.values.index, table.groups))
    assert [titles[r] for r in ("ListMLE", "R-LTR", "PAMM", "R-LTR-NTN", "PAMM-NTN", "MDP-DIV", "DALETOR")] == \
        ["Supervised implicit"] * 7
    assert [titles[r] for r in ("DSSA", "HDSSA", "DESA")] == ["Supervised explicit"] * 3
    assert table.to_markdown().index("*Supervised implicit*") < table.to_markdown().index("*Supervised explicit*")


def test_a_settings_note_follows_its_main_and_cutoff_tables():
    """The oracle study's tables say where its aspects come from (config/oracle.yaml, report.note)."""
    note = load_params([ROOT / "params.yaml", ROOT / "config" / "oracle.yaml"])["report"]["note"]
    assert "sense structure that defines relevance" in note and "not from the official subtopics' texts" in note
    metrics, _ = fake_metrics()
    tables = build_tables(metrics, {**PARAMS, "report": {**PARAMS["report"], "note": note}})
    assert tables["main"].note.startswith("▲/▼") and tables["main"].note.endswith(note)
    assert tables["cutoffs"].note.endswith(note) and note in tables["main"].to_markdown()
    assert note not in tables["ablation-dssa"].note
    assert note not in build_tables(metrics, PARAMS)["main"].note


def test_an_ablation_note_follows_the_tests_note():
    metrics, _ = fake_metrics()
    dssa = {**PARAMS["report"]["ablations"]["dssa"], "note": "DSSA (dot) also has 100 hidden units."}
    params = {**PARAMS, "report": {**PARAMS["report"], "ablations": {"dssa": dssa}}}
    table = build_tables(metrics, params)["ablation-dssa"]
    assert table.note.startswith("▲/▼") and table.note.endswith("DSSA (dot) also has 100 hidden units.")
    assert "100 hidden units" in table.to_markdown() and "100 hidden units" in table.to_latex()
    assert build_tables(metrics, PARAMS)["ablation-dssa"].note.startswith("▲/▼")


def test_an_ablation_table_whose_rows_did_not_run_is_not_written():
    metrics, _ = fake_metrics()
    params = {**PARAMS, "report": {**PARAMS["report"], "ablations": {
        **PARAMS["report"]["ablations"], "ntn": {"title": "NTN", "runs": ["R-LTR", "R-LTR-NTN"], "reference": "R-LTR"},
        "one": {"title": "one row run", "runs": ["DSSA", "DSSA-N1"], "reference": "DSSA"}}}}
    tables = build_tables(metrics, params)
    assert "ablation-dssa" in tables and "ablation-ntn" not in tables
    assert "ablation-one" not in tables                       # a table of one row compares nothing


def test_pvalues_match_scipy_and_holm():
    metrics, runs = fake_metrics()
    wide = pd.DataFrame({"a": runs[("Initial", "")], "b": runs[("xQuAD", "")], "c": runs[("DSSA", "")]})
    p = paired_pvalues(wide, "a")
    assert p["b"] == pytest.approx(stats.ttest_rel(wide["b"], wide["a"]).pvalue)
    raw = pd.Series({"x": 0.01, "y": 0.04, "z": 0.03})
    # Holm by hand: sorted 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04)=0.06
    assert holm_adjust(raw).to_dict() == pytest.approx({"x": 0.03, "y": 0.06, "z": 0.06})


def test_per_position_table_by_hand():
    metrics, runs = fake_metrics()
    table = build_tables(metrics, PARAMS)["per-position"]
    total = float((runs[("DSSA", "")] - runs[("xQuAD", "")]).sum())
    assert table.values.at["Total Imp.", "ERR_IA@5"] == pytest.approx(total)
    assert table.values.at["Avg Imp.", "alpha_nDCG@10"] == pytest.approx(total / 10)


def test_build_report_writes_every_format(tmp_path):
    metrics, _ = fake_metrics()
    mpath = tmp_path / "metrics.parquet"
    metrics.to_parquet(mpath)
    ppath = tmp_path / "params.yaml"
    ppath.write_text(yaml.safe_dump(PARAMS))
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("train: {epochs: 1}\n")
    params = {**PARAMS, "report": {**PARAMS["report"], "sweeps": {
        "hidden": {"title": "U", "x": "U", "runs": {"DSSA": 50, "DSSA-dot": 100}},
        "absent": {"title": "not run", "x": "N", "runs": {"DSSA-N1": 1, "DSSA": 10}}}}}
    written = build_report(mpath, params, [ppath, overlay], tmp_path / "out")
    names = {p.relative_to(tmp_path / "out").as_posix() for p in written}
    assert "plots/sweeps.png" in names                      # one panel: the sweep with at least two rows run
    for stem in ("main", "cutoffs", "ablation-dssa", "per-position"):
        assert {f"tables/{stem}.md", f"tables/{stem}.tex", f"tables/{stem}.html"} <= names
    assert "plots/per-query-differences.png" in names and "plots/per-query-differences.svg" in names
    md = (tmp_path / "out/tables/main.md").read_text()
    assert "| DSSA | **" in md and "α-nDCG@20" in md
    tex = (tmp_path / "out/tables/main.tex").read_text()
    assert r"\textbf{" in tex and r"\begin{tabular}" in tex
    readme = (tmp_path / "out/README.md").read_text()
    for path in (ppath, overlay):  # every merged params file is named with its hash
        assert f"`{path.as_posix()}`, hash `{params_hash(path)}`" in readme
    (tmp_path / "out/tables/main.md").unlink()                               # as Snakemake removes it
    build_report(mpath, params, [ppath, overlay], tmp_path / "out")          # a second report replaces the first
    assert (tmp_path / "out/tables/main.md").exists()
    (tmp_path / "out/.srdiv-outputs.json").unlink()          # a fresh clone's committed report: no manifest, but git
    git = ["git", "-C", tmp_path / "out", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "report"]):
        subprocess.run([*git, *args], check=True)
    (tmp_path / "out/tables/main.md").unlink()
    build_report(mpath, params, [ppath, overlay], tmp_path / "out")          # git holds every other file as it is
    (tmp_path / "out/.srdiv-outputs.json").unlink()
    for args in (["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "report again"]):   # the README's time may have turned a minute
        subprocess.run([*git, *args], check=True)
    (tmp_path / "out/tables/ablation-gone.md").write_text("a table of the user's")
    with pytest.raises(InputError, match="tables/ablation-gone.md: srdiv did not write this file"):
        build_report(mpath, params, [ppath, overlay], tmp_path / "out")
    assert (tmp_path / "out/tables/ablation-gone.md").read_text() == "a table of the user's"
    (tmp_path / "out/tables/ablation-gone.md").unlink()
    build_report(mpath, params, [ppath, overlay], tmp_path / "again")
    for plot in ("per-query-differences.svg", "sweeps.svg", "sweeps.png"):    # same inputs, same bytes
        assert (tmp_path / "out/plots" / plot).read_bytes() == (tmp_path / "again/plots" / plot).read_bytes()


def test_performance_table_counts_trainings_best_at_their_last_epoch_and_their_devices(tmp_path):
    from srdiv.report.performance import convergence_note, performance_table, unbenchmarked_note
    from srdiv.report.specs import RunSpec
    from srdiv.report.tables import frame_markdown

    def job(row, fold, best_epoch, epochs, allowed):
        grid = [{"point": {"lam": 0.5}, "valid": 0.5, "best_epoch": best_epoch, "epochs": epochs},
                {"point": {"lam": 0.8}, "valid": 0.4, "best_epoch": allowed, "epochs": allowed}]
        write_job(tmp_path / "models" / row / f"fold{fold}", row, fold,
                  hparams={"chosen": {"lam": 0.5}, "grid": grid, "spec": {"train": {"epochs": allowed}}},
                  timings={"train_seconds": 10.0 * fold, "device": "cuda" if row == "B" else "cpu",
                           **({"reused_from": "work/x/models/C/fold1"} if row == "C" else {}),
                           **({"tune_workers": 2} if (row, fold) == ("A", 2) else {})},
                  rank={"device": "cuda:1"})

    job("A", 1, 10, 10, 10)   # best at the last epoch allowed
    job("A", 2, 4, 7, 10)     # stopped early
    job("B", 1, 3, 3, 3)      # best at its own last allowed epoch
    job("C", 1, 0, 0, 10)     # nothing trained (an unsupervised row), copied from the main run
    specs = [RunSpec(k, k, "", "explicit") for k in "ABC"]
    perf = performance_table(tmp_path / "models", None, specs)
    assert perf.set_index("Method")["best at last epoch"].fillna("-").to_dict() == {"A": "1/2", "B": "1/1", "C": "-"}
    assert perf.set_index("Method")["epochs trained (all folds)"].fillna(0).to_dict() == {   # every trial's epochs
        "A": 10 + 10 + 7 + 10, "B": 3 + 3, "C": 0 + 10}
    assert perf.set_index("Method")["train s (all folds)"].to_dict() == {"A": 30.0, "B": 10.0, "C": 10.0}
    assert perf.set_index("Method")["trained on"].to_dict() == {     # the training device, not the ranking one
        "A": "cpu (1), cpu, 2 points at once (1)", "B": "cuda (1)", "C": "cpu, copied (1)"}
    with pytest.raises(InputError, match="row B has no job records for fold 2, which the metrics hold"):
        performance_table(tmp_path / "models", None, specs, folds=[1, 2])      # never a median over fewer folds
    (tmp_path / "models/A/fold2/rank.json").unlink()
    with pytest.raises(InputError, match="A/fold2/rank.json: missing"):
        performance_table(tmp_path / "models", None, specs)
    write_job(tmp_path / "models/A/fold2", "A", 2, rank={"model": {**json.loads(
        (tmp_path / "models/A/fold1/rank.json").read_text())["model"]}})          # the run of fold 1's model
    with pytest.raises(InputError, match="the run was ranked with a model of row A fold 1"):
        performance_table(tmp_path / "models", None, specs)
    job("A", 2, 4, 7, 10)                                                    # as it was
    assert "2 of 3 (67%)" in convergence_note(perf)
    assert unbenchmarked_note(perf) == ""                                   # no benchmark records asked for
    bench = tmp_path / "bench" / "train"
    bench.mkdir(parents=True)
    for row in "AC":                                                        # B trained outside the rules
        (bench / f"{row}-fold1.tsv").write_text("s\th:m:s\tmax_rss\tcpu_time\n12.5\t0:00:12\t100.0\t9.5\n")
    perf = performance_table(tmp_path / "models", tmp_path / "bench", specs)
    assert perf.set_index("Method")["job wall s (median)"].isna().to_dict() == {"A": False, "B": True, "C": False}
    assert perf.set_index("Method")["job CPU s (median)"].fillna(0).to_dict() == {"A": 9.5, "B": 0, "C": 9.5}
    assert perf.set_index("Method")["job CPU s (all folds)"].fillna(0).to_dict() == {"A": 9.5, "B": 0, "C": 9.5}
    assert "no Snakemake benchmark record" in unbenchmarked_note(perf)
    assert "| B " in frame_markdown(perf) and "nan" not in frame_markdown(perf)   # missing values: empty cells
    assert "| 37 |" in " ".join(frame_markdown(perf).split()) and "37.0" not in frame_markdown(perf)  # a count
    assert convergence_note(perf.drop(columns="best at last epoch")) == ""


def test_a_pipe_in_a_label_stays_inside_its_markdown_cell():
    from srdiv.report.tables import Table, frame_markdown

    label = "MDP-DIV (M = |X|)"
    frame = pd.DataFrame({"Method": [label], "folds": [5]})
    values = pd.DataFrame({"alpha_nDCG@20": [0.5]}, index=[label])
    table = Table("t", values, values.map(lambda _: ""), values.map(lambda _: False), ["Supervised"])
    for text in (frame_markdown(frame), table.to_markdown()):
        row = next(line for line in text.splitlines() if "M = " in line)
        assert row.replace(r"\|", "").count("|") == 3 and r"\|X\|" in row   # three cell borders: two cells


def test_tuning_table_lists_each_folds_choice_and_counts_grid_ends(tmp_path):
    from srdiv.io import InputError
    from srdiv.report.specs import RunSpec
    from srdiv.report.tuning import tuning_note, tuning_table

    def job(row, fold, chosen, grid, measure="alpha_nDCG@20"):
        write_job(tmp_path / "models" / row / f"fold{fold}", row, fold, hparams={
            "chosen": chosen, "grid": [{"point": p, "valid": 0.5, "best_epoch": 1, "epochs": 1} for p in grid],
            "valid_measure": measure})

    grid = [{"lam": lam, "lr": lr} for lam in (0.0, 0.5, 1.0) for lr in (0.01, 0.1)]
    for fold, chosen in ((2, {"lam": 1.0, "lr": 0.1}), (1, {"lam": 0.5, "lr": 0.1}), (3, {"lam": 0.0, "lr": 0.01})):
        job("A", fold, chosen, grid)
    job("B", 1, {}, [{}])                                       # nothing tuned
    job("C", 1, {"cell": "gru"}, [{"cell": "lstm"}, {"cell": "gru"}, {"cell": "rnn"}])
    specs = [RunSpec(k, k, "", "explicit") for k in "ABC"]
    table, info = tuning_table(tmp_path / "models", specs)
    assert info.measures == {"A": "alpha_nDCG@20", "B": "alpha_nDCG@20", "C": "alpha_nDCG@20"}
    assert "validation queries (alpha_nDCG@20);" in tuning_note(info)
    job("C", 1, {"cell": "gru"}, [{"cell": "lstm"}, {"cell": "gru"}, {"cell": "rnn"}], measure="ERR_IA@20")
    table, info = tuning_table(tmp_path / "models", specs)
    assert "validation queries (alpha_nDCG@20: A, B; ERR_IA@20: C);" in tuning_note(info)   # train.valid_measure
    table = table.set_index(["Method", "parameter"])
    assert list(table.index) == [("A", "lam"), ("A", "lr"), ("C", "cell")]
    assert table.loc[("A", "lam")].to_dict() == {"range": "0.0, 0.5, 1.0", "folds": "1, 2, 3",
                                                 "chosen": "0.5, 1*, 0*", "trials (pruned)": "6 (0), 6 (0), 6 (0)",
                                                 "at an edge": "2/3"}
    assert table.loc[("A", "lr"), "at an edge"] == "3/3"      # two values: every choice is the first or last
    assert table.loc[("C", "cell")].to_dict() == {"range": "gru, lstm, rnn", "folds": "1", "chosen": "gru*",
                                                  "trials (pruned)": "3 (0)", "at an edge": "1/1"}
    assert "or more (search them again with a wider range): A (lr)." in tuning_note(info)
    assert tuning_table(None, specs)[0].empty
    hparams = json.loads((tmp_path / "models/C/fold1/hparams.json").read_text())
    (tmp_path / "models/C/fold1/hparams.json").write_text(json.dumps({k: v for k, v in hparams.items() if k != "chosen"}))
    with pytest.raises(InputError, match="C/fold1/hparams.json.*no 'chosen'"):
        tuning_table(tmp_path / "models", specs)


def test_tuning_table_reads_the_declared_range_trials_and_budget(tmp_path):
    from srdiv.report.specs import RunSpec
    from srdiv.report.tuning import tuning_note, tuning_table

    tune = {"model.args.lam": {"low": 0.0, "high": 1.0}, "optim.args.lr": {"low": 1.0e-4, "high": 1.0, "log": True}}
    search = {"sampler": "tpe", "trials": 3, "pruned": 1, "pruner": "median", "batch": 2, "epochs": 30,
              "space": {"model.args.lam": "0-1", "optim.args.lr": "0.0001-1 (log)"}}
    for fold, (lam, lr) in enumerate([(0.0, 1.2e-4), (0.5, 0.01), (1.0, 0.9), (0.3, 0.5)], start=1):
        grid = [{"number": 0, "point": {"model.args.lam": lam, "optim.args.lr": lr}, "state": "complete",
                 "valid": 0.5, "best_epoch": 2, "epochs": 3},
                {"number": 1, "point": {"model.args.lam": 0.2, "optim.args.lr": 0.1}, "state": "pruned",
                 "valid": 0.1, "best_epoch": 1, "epochs": 1, "pruned_at": 1},
                {"number": 2, "point": {"model.args.lam": 0.2, "optim.args.lr": 0.1}, "state": "complete",
                 "valid": 0.4, "best_epoch": 2, "epochs": 3}]
        write_job(tmp_path / "models" / "D" / f"fold{fold}", "D", fold, hparams={
            "chosen": {"model.args.lam": lam, "optim.args.lr": lr}, "grid": grid, "search": search,
            "spec": {"model": {"name": "dssa"}, "tune": tune, "train": {"epochs": 30}, "search": {"trials": 3}}})
    table, info = tuning_table(tmp_path / "models", [RunSpec("D", "D", "", "explicit")])
    table = table.set_index("parameter")
    assert table.loc["optim.args.lr", "range"] == "0.0001-1 (log)"
    assert table.loc["optim.args.lr", "chosen"] == "0.00012*, 0.01, 0.9*, 0.5*"
    assert table.loc["optim.args.lr", "at an edge"] == "3/4" and table.loc["model.args.lam", "at an edge"] == "2/4"
    assert table.loc["model.args.lam", "trials (pruned)"] == "3 (1), 3 (1), 3 (1), 3 (1)"
    note = tuning_note(info)
    assert "Search budget: 3 TPE trials, each of at most 30 epochs, median pruning, batches of 2 (D)." in note
    assert "lam = 0: the query layer alone (relevance); lam = 1: the subtopic layer alone (diversity)" in note
    assert "wider range): D (optim.args.lr)." in note


def test_every_declared_model_end_is_a_closed_end_of_its_allowed_interval():
    """An ``ARG_ENDS`` value is what the tuning table calls an answer, never an edge: it must be a value the
    model accepts and that no wider range can pass (a closed end of the argument's ``ARG_RANGES``)."""
    import srdiv.models  # noqa: F401 (registers the models)
    from srdiv.registry import MODELS, _interval

    checked = 0
    for name in MODELS.names():
        ranges, ends = {}, {}
        for klass in reversed(MODELS.get(name).__mro__):
            ranges.update(vars(klass).get("ARG_RANGES", {}))
            ends.update(vars(klass).get("ARG_ENDS", {}))
        for arg, values in ends.items():
            assert arg in ranges, f"{name}: ARG_ENDS names {arg}, which has no ARG_RANGES interval"
            low, high, low_in, high_in = _interval(ranges[arg])
            closed = {low} if low_in else set()
            closed |= {high} if high_in else set()
            for value in values:
                assert value in closed, f"{name}: {arg} = {value} is not a closed end of {ranges[arg]}"
                checked += 1
    assert checked >= 17  # lam of MMR, xQuAD, PM2, HxQuAD, HPM2 and DSSA, alpha of HxQuAD and HPM2, GSF's g


def test_a_size_at_the_end_of_what_its_model_allows_is_an_answer_not_an_edge(tmp_path):
    """GSF's group size 1 (DALETOR's ``ARG_ENDS``) cannot widen: chosen on 3 folds it is shown as an edge but
    not flagged, and the note says what it makes of the row; the other end of the grid (64) is flagged."""
    from srdiv.report.specs import RunSpec
    from srdiv.report.tuning import tuning_note, tuning_table

    sizes = [1, 2, 4, 16, 64]
    search = {"sampler": "tpe", "trials": 2, "pruned": 0, "pruner": "median", "batch": 2, "epochs": 30,
              "space": {"model.args.group_size": "1, 2, 4, 16, 64"}}

    def jobs(row, chosen):
        for fold, g in enumerate(chosen, start=1):
            grid = [{"number": 0, "point": {"model.args.group_size": g}, "state": "complete", "valid": 0.5,
                     "best_epoch": 2, "epochs": 3}]
            write_job(tmp_path / "models" / row / f"fold{fold}", row, fold, hparams={
                "chosen": {"model.args.group_size": g}, "grid": grid, "search": search,
                "spec": {"model": {"name": "daletor"}, "tune": {"model.args.group_size": sizes},
                         "search": {"trials": 2}}})

    jobs("G", [4, 1, 1, 4, 1])
    jobs("H", [64, 64, 1, 64, 4])
    table, info = tuning_table(tmp_path / "models", [RunSpec(k, k, "", "implicit") for k in "GH"])
    assert table.set_index("Method").loc["G", "chosen"] == "4, 1*, 1*, 4, 1*"
    assert table.set_index("Method").loc["G", "at an edge"] == "3/5"
    note = tuning_note(info)
    assert ("A size at the end of what its model allows is an answer, not a range too narrow (G, H): "
            "group_size = 1: each document scored alone (GSF is then the DNN scorer).") in note
    assert "wider range): H (model.args.group_size)." in note


def test_the_budget_names_an_epoch_that_visits_a_share_of_the_contexts(tmp_path):
    """A list-pairwise row whose epoch visits a share of its contexts (``context_fraction``) says so."""
    from srdiv.report.specs import RunSpec
    from srdiv.report.tuning import tuning_note, tuning_table

    search = {"sampler": "tpe", "trials": 2, "pruned": 0, "pruner": "median", "batch": 2, "epochs": 30,
              "space": {"optim.args.lr": "0.0001-0.1 (log)"}}
    grid = [{"number": 0, "point": {"optim.args.lr": 0.001}, "state": "complete", "valid": 0.5, "best_epoch": 2,
             "epochs": 7}]
    for row, share in (("E", 0.25), ("F", 1.0)):
        write_job(tmp_path / "models" / row / "fold1", row, 1, hparams={
            "chosen": {"optim.args.lr": 0.001}, "grid": grid, "search": search,
            "spec": {"model": {"name": "desa"}, "objective": {"name": "list_pairwise", "args": {"context_fraction": share}},
                     "tune": {"optim.args.lr": {"low": 1.0e-4, "high": 0.1, "log": True}}, "search": {"trials": 2}}})
    _, info = tuning_table(tmp_path / "models", [RunSpec("E", "E", "", "explicit"), RunSpec("F", "F", "", "explicit")])
    note = tuning_note(info)
    assert "2 TPE trials, each of at most 30 epochs of 0.25 of the contexts each, median pruning, batches of 2 (E)" in note
    assert "2 TPE trials, each of at most 30 epochs, median pruning, batches of 2 (F)" in note


@pytest.mark.parametrize("damage,message", [
    (lambda m: m.assign(value=m["value"].where(m.index != 7)), "row 'Initial': .* is not a finite number"),
    (lambda m: pd.concat([m, m.iloc[[3]]]), "appears twice"),
    (lambda m: m[~((m["model"] == "xQuAD") & (m["qid"] == "q4"))], "row 'xQuAD' has no .* for 1 of the 30 queries"),
    (lambda m: m[m["model"] != "Initial"], "reference row 'Initial' has no metrics"),
])
def test_the_report_refuses_incomplete_evidence(tmp_path, damage, message):
    """A NaN, a duplicate, a query missing from one row or a missing reference is one error, no table."""
    from srdiv.io import InputError

    metrics, _ = fake_metrics()
    path = tmp_path / "metrics.parquet"
    damage(metrics).to_parquet(path)
    with pytest.raises(InputError, match=message):
        build_report(path, PARAMS, [], tmp_path / "out")
    assert not (tmp_path / "out" / "tables").exists()


def test_the_readme_names_the_commit_each_row_was_trained_at(tmp_path):
    from srdiv.report.performance import training_commits
    from srdiv.report.specs import RunSpec

    for row, fold, commit in (("DSSA", 1, "abc1234"), ("DSSA", 2, "abc1234"), ("xQuAD", 1, "def5678")):
        write_job(tmp_path / row / f"fold{fold}", row, fold, timings={"commit": commit})
    specs = [RunSpec(k, k, "", "explicit") for k in ("DSSA", "xQuAD", "Initial")]
    assert training_commits(tmp_path, specs) == ["- rows trained at commit `abc1234`: DSSA",
                                                 "- rows trained at commit `def5678`: xQuAD"]
    (tmp_path / "Old" / "fold1").mkdir(parents=True)
    (tmp_path / "Old" / "fold1" / "timings.json").write_text("{}")      # a record of an earlier srdiv
    with pytest.raises(InputError, match="Old/fold1/hparams.json: missing"):
        training_commits(tmp_path, [*specs, RunSpec("Old", "Old", "", "explicit")])


def test_learning_curve_mean_stops_where_the_first_fold_stopped():
    from srdiv.report.plots import common_epochs

    curves = pd.DataFrame({"fold": [1, 1, 1, 2, 2], "epoch": [1, 2, 3, 1, 2],
                           "loss": [4.0, 3.0, 2.0, 6.0, 5.0], "valid": [0.5, 0.6, 0.9, 0.7, 0.8]})
    mean = common_epochs(curves)
    # fold 2 stopped after epoch 2: epoch 3 (fold 1 alone, 0.9) would make the mean jump
    assert mean.index.tolist() == [1, 2]
    assert mean["valid"].tolist() == pytest.approx([0.6, 0.7]) and mean["loss"].tolist() == [5.0, 4.0]


def test_no_committed_table_leaves_a_row_at_an_edge_of_its_range():
    """A row choosing a learning-rate or size edge on EDGE_FOLDS folds or more is searched again, wider, before
    its table is committed (issue: a fair comparison): every committed tuning table made under the common
    search says "none" after that line. Tables made before it (each row's own grid) have no such line."""
    prefix = "Rows choosing an edge of a learning-rate or size range on"
    checked = {}
    for path in sorted((ROOT / "results").glob("*/tables/tuning.md")):
        lines = [line for line in path.read_text().splitlines() if line.startswith(prefix)]
        if lines:
            checked[path.relative_to(ROOT)] = lines[0].rpartition(": ")[2]
    if not checked:
        pytest.skip("no committed tuning table was made under the common search yet")
    assert all(flagged == "none." for flagged in checked.values()), checked

"""The commit a table names: the checkout's, or outside git the one SRDIV_COMMIT names, never silently blank."""

from srdiv.provenance import git_commit


def test_outside_git_the_named_commit_is_labelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("SRDIV_COMMIT", raising=False)
    assert git_commit() == "unknown"
    monkeypatch.setenv("SRDIV_COMMIT", "abc1234")
    assert git_commit() == "abc1234 (SRDIV_COMMIT)"


def test_inside_git_the_checkout_wins(monkeypatch):
    monkeypatch.setenv("SRDIV_COMMIT", "abc1234")
    assert "SRDIV_COMMIT" not in git_commit() and git_commit() != "unknown"

"""The documentation site builds with warnings as errors, and every example in examples/ runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_docs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (./setup.sh installs it)")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "EgressPort" in api and "OvsDatapath" in api
    ref = (tmp_path / "site" / "scenario-files" / "index.html").read_text()
    from ovssim.scenario import KEYS
    for section, keys in KEYS.items():          # the reference lists every key the validator accepts
        for key in keys:
            assert f"<code>{key}</code>" in ref, (section, key)


def test_every_example_is_documented():
    page = (ROOT / "docs" / "library.md").read_text()
    for ex in EXAMPLES:
        assert f"<!-- example: {ex.name} -->" in page, f"{ex.name} is not shown in docs/library.md"


@pytest.mark.parametrize("script", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_runs(script, tmp_path):
    args = [sys.executable, str(script), "--quick"]
    if "--plot" in script.read_text():
        args += ["--plot", str(tmp_path / "figure.png")]
    r = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip(), "the example printed nothing"
    if "--plot" in args:
        assert (tmp_path / "figure.png").stat().st_size > 10_000

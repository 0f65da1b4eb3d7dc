"""Data shipped with the package: the default profile, and ``tree/``, the source tree's calibrated
profiles (``calibration/``), the seeds' tables (``data/seeds``), the collected campaigns validation
reads (``data/local``), the validation scenarios and the examples.

In a source checkout ``tree/`` holds symbolic links to those folders, so there is one copy of each
file; building a wheel copies them in, so an installed ovssim finds them without the checkout.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def root() -> Path:
    """The folder holding ``calibration/``, ``data/``, ``validation/scenarios`` and ``examples/``:
    the source checkout when ovssim runs from one, else the copy inside the installed package."""
    checkout = _HERE.parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "calibration").is_dir():
        return checkout
    return _HERE / "tree"


def bundled(name: str) -> Path:
    """``root() / name``, e.g. ``bundled("data/seeds")``."""
    return root() / name

"""Kept for old imports: the sweep commands live in :mod:`ovssim.sweep.cli`."""
from .sweep.cli import _parse_set, sweep, whatif  # noqa: F401

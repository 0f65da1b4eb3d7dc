"""Errors users can act on.

Every error ovssim raises on bad input is an :class:`OvssimError` whose
message names the problem and the fix; the CLI prints it as one line and
exits with status 2, without a traceback.
"""
from __future__ import annotations


class OvssimError(Exception):
    """Base of every user-facing error."""


class ConfigError(OvssimError):
    """A scenario, profile, campaign or sweep file that cannot be used as written."""

    def __init__(self, problem: str, *, file: str | None = None, key: str | None = None,
                 fix: str | None = None):
        self.problem, self.file, self.key, self.fix = problem, file, key, fix
        where = ""
        if file:
            where += f"{file}: "
        if key:
            where += f"[{key}] "
        msg = f"{where}{problem}"
        if fix:
            msg += f" -- fix: {fix}"
        super().__init__(msg)


class UnitError(OvssimError, ValueError):
    """A value whose unit or magnitude cannot be understood."""


class DataError(OvssimError):
    """A measured-data file that is empty, corrupt or in the wrong units."""

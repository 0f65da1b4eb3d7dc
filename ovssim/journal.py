"""Append-only JSON-lines journals: the commit log of a sweep (``ovssim.sweep``) and of a
measurement campaign (``ovssim.collect.store``).

Each record is one line written with a single ``write`` and ``fsync``, so a kill leaves at most
the last line torn (no newline, or not JSON).  :func:`cut_torn_tail` removes that tail before
anything is appended, so the next record starts on a line of its own instead of being glued to
the torn one (which would lose it and make every later read fail).  A damaged line anywhere else
is not a kill's doing: it is reported, never silently dropped with everything after it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from .errors import DataError


def _damaged(path: Path, lineno: int) -> DataError:
    return DataError(f"{path}: line {lineno} is corrupt (not JSON) and is not the last line; the file "
                     "was edited or damaged -- fix: remove that line (its run is redone on --resume)")


def iter_records(path: str | Path) -> Iterator[dict]:
    """Each complete record in file order; a torn last line is skipped, a damaged middle one raises."""
    path = Path(path)
    if not path.exists():
        return
    size = path.stat().st_size
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if fh.tell() >= size:       # the last line: the record being written at the kill
                    return
                raise _damaged(path, lineno) from None
            if not line.endswith(b"\n"):      # complete JSON but no newline: the write was cut
                return
            if not isinstance(rec, dict):
                raise _damaged(path, lineno)
            yield rec


def cut_torn_tail(path: str | Path) -> int:
    """Remove a torn last line (see the module docstring); returns the bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    size = path.stat().st_size
    good_end = pos = 0
    with open(path, "rb") as fh:
        for line in fh:
            pos += len(line)
            if not line.endswith(b"\n"):
                break                         # unterminated: the write was cut
            if pos >= size and line.strip():
                try:
                    json.loads(line)
                except ValueError:
                    break                     # the last line is not JSON: torn, then padded
            good_end = pos                    # (a damaged middle line is left for the reader to report)
    if good_end != size:
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
            os.fsync(fh.fileno())
    return size - good_end


def append(path: str | Path, record: dict, **dumps) -> None:
    """Commit one record: a single ``O_APPEND`` write of the whole line, then ``fsync``."""
    line = (json.dumps(record, **dumps) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)

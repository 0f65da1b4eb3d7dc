"""Output files: checked before any work, written whole or not at all.

Every file ovssim writes for a user (a run's results, a profile, a figure, a report) goes through
:func:`write_atomic`: the bytes go to a temporary file in the target's folder, are flushed to disk,
and the temporary file is renamed over the target (``rename(2)`` is atomic within a file system), so
a kill or a full disk never leaves half a file, and an existing file is replaced only when asked.
:func:`check_output` runs the same checks up front, so a long simulation does not end in an
unwritable path.  Neither the simulator nor the collector owns this module: both use it.
"""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

from .errors import OvssimError


def check_output(path, *, overwrite: bool = False, flag: str = "--force", what: str = "output",
                 make_parents: bool = False) -> Path:
    """``path`` as a Path, after checking that its folder exists (``make_parents``: is created) and
    is writable and, unless ``overwrite``, that no file is there yet (``flag`` allows replacing it)."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OvssimError(f"{what} {path} is a folder; give a file name")
    if make_parents and not parent.exists():
        try:
            parent.mkdir(parents=True)
        except OSError as exc:
            raise OvssimError(f"cannot create folder {parent} for {what} {path}: {exc.strerror}; "
                              "choose a writable path") from None
    if not parent.is_dir():
        raise OvssimError(f"cannot write {what} {path}: folder {parent} does not exist; create it "
                          f"(mkdir -p {parent}) or choose another path")
    try:                                  # a real try (os.access says yes to root on a read-only mount)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise OvssimError(f"cannot write {what} {path}: folder {parent} is not writable ({exc.strerror}); "
                          "choose a writable path") from None
    if path.exists() and not overwrite:
        raise OvssimError(f"{what} {path} already exists; pass {flag} to replace it, or choose another path")
    return path


def write_atomic(path, data: bytes | str, *, overwrite: bool = True, flag: str = "--force",
                 what: str = "output", make_parents: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename; returns the path."""
    path = check_output(path, overwrite=overwrite, flag=flag, what=what, make_parents=make_parents)
    if isinstance(data, str):
        data = data.encode()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise OvssimError(f"cannot write {what} {path}: {exc.strerror or exc}; choose a writable path") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return path


def save_figure(fig, path, *, overwrite: bool = True, dpi: int = 120, what: str = "figure",
                make_parents: bool = False) -> Path:
    """A matplotlib figure written with :func:`write_atomic` (format from the suffix, PNG by default)."""
    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".").lower() or "png", dpi=dpi)
    return write_atomic(path, buf.getvalue(), overwrite=overwrite, what=what, make_parents=make_parents)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

"""Read a TOML input file, turning every way it can be unusable into one ConfigError."""
from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

from .errors import ConfigError

MAX_INPUT_BYTES = 16 * 1024 * 1024     # the largest input file read (the biggest profile is ~10 kB)


def read_limited(path, what: str, fix: str, *, limit: int = MAX_INPUT_BYTES, **where) -> bytes:
    """The bytes of the regular file ``path``, refusing devices, pipes and files over ``limit`` bytes
    (``ovssim run /dev/zero`` must not read for ever)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"{what} path {path} is not a regular file", fix=f"give a {what} file",
                                  **where)
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} file not found: {path}", fix=fix, **where) from None
    except IsADirectoryError:
        raise ConfigError(f"{what} path {path} is a directory", fix=f"give a {what} file", **where) from None
    except PermissionError:
        raise ConfigError(f"cannot read {what} file {path}: permission denied", fix="check its permissions",
                          **where) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror}", fix=fix, **where) from None
    if len(data) > limit:
        raise ConfigError(f"{what} file {path} is larger than {limit // 1024 // 1024} MiB",
                          fix=f"give a {what} file, not a data dump", **where)
    return data


def read_toml(path, what: str, fix: str, *, key: str | None = None, file: str | None = None) -> dict:
    """The parsed TOML at ``path``; ``what`` names the kind of file in messages ("scenario", ...).

    ``file``/``key`` say where the reference came from when the path was named in another
    file (a sweep's ``base``); otherwise the error names ``path`` itself.
    """
    path = Path(path)
    where = {"file": file or str(path), "key": key}
    raw = read_limited(path, what, fix, **where)
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} file {path} is not valid TOML: {exc}", fix="correct the TOML syntax",
                          **where) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} file {path} is not a text file", fix=f"give a TOML {what} file", **where) from None
    except RecursionError:
        raise ConfigError(f"{what} file {path} nests arrays or tables too deeply to read",
                          fix="flatten it (no scenario needs more than a few levels)", **where) from None

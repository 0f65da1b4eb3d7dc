"""Read a TOML input file, turning every way it can be unusable into one ConfigError."""
from __future__ import annotations

import tomllib
from pathlib import Path

from .errors import ConfigError


def read_toml(path, what: str, fix: str, *, key: str | None = None, file: str | None = None) -> dict:
    """The parsed TOML at ``path``; ``what`` names the kind of file in messages ("scenario", ...).

    ``file``/``key`` say where the reference came from when the path was named in another
    file (a sweep's ``base``); otherwise the error names ``path`` itself.
    """
    path = Path(path)
    where = {"file": file or str(path), "key": key}
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{what} file not found: {path}", fix=fix, **where) from None
    except IsADirectoryError:
        raise ConfigError(f"{what} path {path} is a directory", fix=f"give a {what} .toml file", **where) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} file {path} is not valid TOML: {exc}", fix="correct the TOML syntax",
                          **where) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} file {path} is not a text file", fix=f"give a TOML {what} file", **where) from None
    except PermissionError:
        raise ConfigError(f"cannot read {what} file {path}: permission denied", fix="check its permissions",
                          **where) from None

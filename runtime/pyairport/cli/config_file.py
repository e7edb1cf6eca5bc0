"""`pyairport serve --config FILE`: the serve flags as a TOML file, to review and version.

Every flag has a key of its name with underscores (`catalog_name = "sales"`, `port = 8815`,
`spark_conf = {"spark.driver.memory" = "8g"}`); the catalogs served beside the first are
`[[catalog]]` tables of `name` and (spark) `folder`. A flag on the command line replaces the
file's value (a repeatable flag: all of the file's values). Relative paths in the file are
relative to the file's folder, so a file and what it names can move together. An unknown key
or a value of the wrong type stops the server before it starts, in one line naming the key.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..server.data_plane import AUTO

PATH_KEYS = frozenset(
    {
        "warehouse",
        "jars_dir",
        "auth_token_file",
        "tokens_file",
        "jwt_keys",
        "policy",
        "tls_cert",
        "tls_key",
        "data_socket",
        "data_key_file",
    }
)
"""Keys whose value is a path (relative: to the file's folder)."""

NOT_IN_FILE = frozenset({"help", "config"})


class ConfigError(ValueError):
    """A config file that cannot be served: the message names the file and the key."""


def read_config(path: str | Path, actions: Iterable[argparse.Action]) -> dict[str, Any]:
    """The file's settings as the serve parser's destinations, each checked against its
    flag's type."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    flags = {a.dest: a for a in actions if a.dest not in NOT_IN_FILE and a.option_strings}
    folder = path.resolve().parent
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "catalog":
            values["add_catalog"] = _catalogs(path, value, folder)
            continue
        action = flags.get(key)
        if action is None:
            raise ConfigError(f"{path}: unknown key {key!r} (keys are the serve flags' names)")
        values[key] = _value(path, key, action, value, folder)
    if "catalog" in data and "add_catalog" in data:
        raise ConfigError(f"{path}: give the catalogs as [[catalog]] or add_catalog, not both")
    return values


def _value(path: Path, key: str, action: argparse.Action, value: Any, folder: Path) -> Any:
    def wrong(expected: str) -> ConfigError:
        return ConfigError(f"{path}: key {key!r} must be {expected}, not {value!r}")

    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(action, argparse._AppendAction):
        if key == "spark_conf" and isinstance(value, dict):
            return [f"{k}={_scalar_text(path, f'{key}.{k}', v)}" for k, v in value.items()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("a list of strings" + (" or a table" if key == "spark_conf" else ""))
        return value
    if action.type is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise wrong("an integer")
        return value
    if action.type is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise wrong("a number")
        return float(value)
    if not isinstance(value, str):
        raise wrong("a string")
    if action.choices is not None and value not in action.choices:
        raise wrong("one of " + ", ".join(map(str, action.choices)))
    if key in PATH_KEYS and value != AUTO:  # data_socket's socket of the server's own
        return str(folder / Path(value).expanduser())
    return value


def _scalar_text(path: Path, key: str, value: Any) -> str:
    """A Spark setting's value: TOML's string, integer or boolean, as Spark writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"{path}: key {key!r} must be a string, number or boolean, not {value!r}")


def _catalogs(path: Path, value: Any, folder: Path) -> list[str]:
    """[[catalog]] tables as --add-catalog values."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{path}: key 'catalog' must be [[catalog]] tables (name, folder)")
    added = []
    for index, table in enumerate(value, 1):
        where = f"{path}: [[catalog]] {index}"
        unknown = sorted(set(table) - {"name", "folder"})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (a catalog has name, folder)")
        name, place = table.get("name"), table.get("folder")
        if not isinstance(name, str):
            raise ConfigError(f"{where}: key 'name' must be a string")
        if place is None:
            added.append(name)
            continue
        if not isinstance(place, str):
            raise ConfigError(f"{where}: key 'folder' must be a string")
        added.append(f"{name}={folder / Path(place).expanduser()}")
    return added

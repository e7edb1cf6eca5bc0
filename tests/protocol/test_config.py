"""`pyairport serve --config FILE`: every flag has a key, the file serves what the flags
served, the command line overrides it, and a bad file is refused in one line naming the key."""

from __future__ import annotations

import argparse
import signal
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyairport.cli.config_file import NOT_IN_FILE, PATH_KEYS, ConfigError, read_config
from pyairport.cli.flags import parser as _parser
from pyairport.client import AirportClient, RemoteError

from ..team import make_team
from .test_cli import PYAIRPORT, _serve_refused, _start

SERVE = _parser().commands["serve"]
FLAGS = [a for a in SERVE.settings if a.option_strings and a.dest not in NOT_IN_FILE]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _example(action: argparse.Action) -> tuple[Any, Any]:
    """A value of the flag's type, as TOML holds it and as the parser would give it."""
    if isinstance(action, argparse._StoreTrueAction):
        return True, True
    if isinstance(action, argparse._AppendAction):
        return ["a=1", "b=2"], ["a=1", "b=2"]
    if action.type is int:
        return 7, 7
    if action.type is float:
        return 2.5, 2.5
    if action.choices is not None:
        choice = list(action.choices)[-1]
        return choice, choice
    return "value", "value"


@pytest.mark.parametrize("action", FLAGS, ids=[a.dest for a in FLAGS])
def test_every_serve_flag_has_a_key_of_its_name(action: argparse.Action, tmp_path: Path) -> None:
    held, parsed = _example(action)
    config = tmp_path / "pyairport.toml"
    config.write_text(f"{action.dest} = {_toml(held)}\n")
    values = read_config(config, SERVE.settings)
    expected = str(tmp_path / parsed) if action.dest in PATH_KEYS else parsed
    assert values == {action.dest: expected}
    assert f"--{action.dest.replace('_', '-')}" in action.option_strings


@pytest.mark.parametrize(
    ("held", "read"), [('"auto"', "auto"), ('"run/data.sock"', "{folder}/run/data.sock")]
)
def test_the_data_socket_is_a_path_unless_auto(tmp_path: Path, held: str, read: str) -> None:
    config = tmp_path / "pyairport.toml"
    config.write_text(f"data_socket = {held}\n")
    assert read_config(config, SERVE.settings) == {"data_socket": read.format(folder=tmp_path)}


def test_spark_settings_and_catalogs_read_as_tables(tmp_path: Path) -> None:
    config = tmp_path / "pyairport.toml"
    config.write_text(
        'spark_conf = {"spark.driver.memory" = "8g", "spark.sql.shuffle.partitions" = 4,'
        ' "spark.ui.enabled" = false}\n'
        '[[catalog]]\nname = "hr"\nfolder = "lakes/hr"\n'
        '[[catalog]]\nname = "ops"\nfolder = "/srv/ops"\n'
        '[[catalog]]\nname = "scratch"\n'
    )
    assert read_config(config, SERVE.settings) == {
        "spark_conf": [
            "spark.driver.memory=8g",
            "spark.sql.shuffle.partitions=4",
            "spark.ui.enabled=false",
        ],
        "add_catalog": [f"hr={tmp_path}/lakes/hr", "ops=/srv/ops", "scratch"],
    }


REFUSED = {
    "unknown key": ("prot = 8815\n", "unknown key 'prot'"),
    "integer as text": ('port = "8815"\n', "key 'port' must be an integer, not '8815'"),
    "boolean as text": ('demo = "yes"\n', "key 'demo' must be true or false, not 'yes'"),
    "boolean as integer": ("port = true\n", "key 'port' must be an integer, not True"),
    "not a choice": ('backend = "hive"\n', "key 'backend' must be one of memory, spark"),
    "list of numbers": ("jwt_algorithm = [1]\n", "key 'jwt_algorithm' must be a list of strings"),
    "nested spark value": (
        'spark_conf = {"a" = [1]}\n',
        "key 'spark_conf.a' must be a string, number or boolean",
    ),
    "catalog key": ('[[catalog]]\nname = "hr"\npath = "x"\n', "unknown key 'path'"),
    "catalog as text": ('catalog = "hr"\n', "key 'catalog' must be [[catalog]] tables"),
    "both forms": (
        'add_catalog = ["a"]\n[[catalog]]\nname = "b"\n',
        "give the catalogs as [[catalog]] or add_catalog, not both",
    ),
    "not toml": ("port = = 1\n", "not TOML"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_file_is_refused_in_one_line_naming_the_key(case: str, tmp_path: Path) -> None:
    text, message = REFUSED[case]
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=None) as raised:
        read_config(config, SERVE.settings)
    assert message in str(raised.value) and str(config) in str(raised.value)
    done = _serve_refused("--config", str(config))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    done = _serve_refused("--config", str(tmp_path / "nowhere.toml"))
    assert done.returncode == 2
    assert (
        done.stderr == f"pyairport: error: {tmp_path / 'nowhere.toml'}: No such file or directory\n"
    )


def test_a_team_server_from_a_file_serves_what_the_flags_served(tmp_path: Path) -> None:
    """docs/team.md's setup as a file (memory backend): catalogs, identities, a policy, paths
    relative to the file; the command line's --catalog-name replaces the file's."""
    team = make_team(tmp_path)
    config = tmp_path / "team.toml"
    config.write_text(
        'catalog_name = "from_file"\n'
        f'tokens_file = "{team.tokens_file.name}"\n'
        f'policy = "{team.policy_file.name}"\n'
        "transaction_timeout = 600\n"
        '[[catalog]]\nname = "hr"\n'
    )
    process, location = _start("--config", str(config), "--catalog-name", "sales")
    data = pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "email": ["b"]})
    try:
        with AirportClient(location, token=team.tokens["reader"], catalog="sales") as reader:
            assert {s.name for s in reader.list_schemas("sales")} >= {"dml_schema"}
            with pytest.raises(RemoteError, match='"reader" has no write grant'):
                reader.insert("dml_schema", "users", data)
        with AirportClient(location, catalog="sales") as anonymous:
            with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
                anonymous.list_schemas("sales")
        with AirportClient(location, token=team.tokens["admin"], catalog="hr") as admin:
            assert admin.insert("dml_schema", "users", data).total_changed == 1
        with AirportClient(location, token=team.tokens["admin"], catalog="from_file") as admin:
            with pytest.raises(RemoteError, match='catalog not found: "from_file"'):
                admin.list_schemas("from_file")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err


def test_health_reads_where_the_server_listens_from_the_file(tmp_path: Path) -> None:
    process, location = _start()
    port = int(location.rsplit(":", 1)[1])
    config = tmp_path / "pyairport.toml"
    config.write_text(f'host = "127.0.0.1"\nport = {port}\n')
    try:
        done = subprocess.run(
            [*PYAIRPORT, "health", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stdout) == (0, "SERVING\n"), done.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    done = subprocess.run(
        [*PYAIRPORT, "health", "--config", str(config), "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "UNREACHABLE\n")

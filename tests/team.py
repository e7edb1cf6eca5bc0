"""A server as a team runs it: two catalogs, identities from a tokens file and from JWTs, and a
policy. Shared by the security tests (tests/protocol/test_access.py), the load test
(tests/reliability/test_identities_load.py) and the DuckDB sessions (tests/duckdb)."""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from airport_contracts import Context, CreateSchemaOptions, CreateTableOptions
from pyairport.access.identities import AnyOf, JwtBearer, TokensFile, hash_token
from pyairport.access.policy import Policy
from pyairport.client import AirportClient
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

ISSUER = "https://idp.example.test"
AUDIENCE = "pyairport"

POLICY = """
# reader: reads sales
[[grant]]
identity = "reader"
catalog = "sales"
rights = ["read"]

# writer: reads sales, changes the rows of sales.dml_schema only
[[grant]]
identity = "writer"
catalog = "sales"
rights = ["read"]

[[grant]]
identity = "writer"
catalog = "sales"
schemas = ["dml_schema"]
rights = ["write"]

# admin: everything, everywhere
[[grant]]
identity = "admin"
catalog = "*"
rights = ["read", "write", "ddl"]

# analyst (a JWT): reads hr's dml_schema
[[grant]]
identity = "analyst"
catalog = "hr"
schemas = ["dml_schema"]
rights = ["read"]
"""

SECRET_NAMES = ("payroll", "salaries")
"""hr's schema and table only admin may see: never named to anyone else."""


@dataclass
class Team:
    tokens: dict[str, str]  # identity → its bearer token
    tokens_file: Path
    policy_file: Path
    jwt_key: Any  # the IdP's private key (Ed25519)
    jwt_public_file: Path

    def jwt(self, subject: str, expires_in: float = 600, **claims: Any) -> str:
        import jwt

        payload = {
            "sub": subject,
            "iss": ISSUER,
            "aud": AUDIENCE,
            "exp": int(time.time() + expires_in),
        }
        payload.update(claims)
        return jwt.encode(payload, self.jwt_key, algorithm="EdDSA")

    def authenticator(self) -> AnyOf:
        return AnyOf(
            [
                TokensFile(self.tokens_file),
                JwtBearer(
                    self.jwt_public_file, algorithms=["EdDSA"], issuer=ISSUER, audience=AUDIENCE
                ),
            ]
        )


def make_team(folder: Path) -> Team:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    tokens = {name: secrets.token_hex(24) for name in ("reader", "writer", "admin")}
    tokens_file = folder / "tokens.txt"
    lines = ["# identity  token digest"] + [
        f"{name} {hash_token(token)}" for name, token in tokens.items()
    ]
    tokens_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    policy_file = folder / "policy.toml"
    policy_file.write_text(POLICY, encoding="utf-8")
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    public_file = folder / "idp.pem"
    public_file.write_bytes(public)
    return Team(tokens, tokens_file, policy_file, key, public_file)


def hr_catalog() -> Any:
    """The demo catalog as "hr", with the schema and table only admin may see."""
    catalog = memory_demo_catalog("hr")
    ctx = Context.background()
    catalog.create_schema(ctx, SECRET_NAMES[0], CreateSchemaOptions())
    payroll = catalog.schema(ctx, SECRET_NAMES[0])
    columns = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.float64())])
    payroll.create_table(ctx, SECRET_NAMES[1], columns, CreateTableOptions())
    return catalog


def team_server(team: Team, **config: Any) -> AirportServer:
    """Catalogs "sales" and "hr" (each with its own transactions), the team's identities
    and policy; started."""
    server = AirportServer(
        memory_demo_catalog("sales"),
        MemoryTransactionManager(),
        ServerConfig(port=0, **config),
        authenticator=team.authenticator(),
        policy=Policy.from_file(team.policy_file),
    )
    server.add_catalog(hr_catalog(), MemoryTransactionManager())
    return server.start()


# A Spark lake of a team whose developer holds one schema (tests/backend/test_confinement.py,
# tests/duckdb/test_hostile_names.py).
LAKE_POLICY = """
[[grant]]
identity = "dev"
catalog = "*"
schemas = ["devs", "delta", "pub"]
rights = ["read", "write", "ddl"]

[[grant]]
identity = "admin"
catalog = "*"
rights = ["read", "write", "ddl"]
"""


@dataclass
class Lake:
    root: Path  # the folder around the warehouse: nothing may appear here but inside it
    warehouse: Path
    server: AirportServer
    spark: Any
    dev: AirportClient
    admin: AirportClient

    def files(self) -> set[str]:
        """Every path under root, and /tmp's top level (where an absolute name would land)."""
        found = {str(p.relative_to(self.root)) for p in self.root.rglob("*")}
        return found | {f"/tmp/{name}" for name in os.listdir("/tmp") if "escape" in name}


def _make(spark: Any, folder: Path, schema: str, table: str, extra: str = "") -> str:
    ident = f"delta.`{folder / schema / table}`"
    spark.sql(f"CREATE TABLE {ident} (id BIGINT, secret STRING) USING delta{extra}")
    spark.sql(f"INSERT INTO {ident} VALUES (1, 'the salary of ann'), (2, 'the salary of bo')")
    return ident


_WRITTEN: dict[int, Path] = {}  # id(spark) → the warehouse it wrote, copied for each test


def _written_by_spark(spark: Any) -> Path:
    """The team's warehouse as plain Spark writes it, written once per session: each test gets
    a copy of its own (a Delta table's log names its files relative to its folder)."""
    if id(spark) not in _WRITTEN:
        folder = Path(tempfile.mkdtemp(prefix="pyairport-team-lake-")) / "warehouse"
        atexit.register(shutil.rmtree, folder.parent, True)
        cdf = " TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
        hr = _make(spark, folder, "hr", "salaries", cdf)
        spark.sql(f"DELETE FROM {hr} WHERE secret = 'the salary of bo'")
        _make(spark, folder, "pub", "notes", cdf)
        _make(spark, folder, "devs", "seed")
        _make(spark, folder, "other", "kept")
        _WRITTEN[id(spark)] = folder
    return _WRITTEN[id(spark)]


@contextlib.contextmanager
def spark_team_lake(spark: Any, tmp_path: Path) -> Iterator[Lake]:
    """A warehouse plain Spark wrote — hr.salaries (one row deleted), pub.notes, devs.seed,
    other.kept — served with the lake functions to dev (read, write, ddl on devs, delta and pub)
    and admin (everything)."""
    from pyairport.backends.spark import SparkBackend

    warehouse = tmp_path / "warehouse"
    shutil.copytree(_written_by_spark(spark), warehouse)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"dev {hash_token('dev-token')}\nadmin {hash_token('admin-token')}\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(LAKE_POLICY)
    backend = SparkBackend(spark, warehouse)
    backend.serve_lake_functions()
    server = AirportServer(
        backend.catalog,
        MemoryTransactionManager(),
        ServerConfig(port=0),
        authenticator=TokensFile(tokens),
        policy=Policy.from_file(policy),
    ).start()
    dev = AirportClient(server.location, token="dev-token")
    admin = AirportClient(server.location, token="admin-token")
    try:
        yield Lake(tmp_path, warehouse, server, spark, dev, admin)
    finally:
        dev.close()
        admin.close()
        server.stop(0)
        backend.close()

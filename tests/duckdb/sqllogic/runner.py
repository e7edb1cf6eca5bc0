"""A sqllogictest runner for DuckDB's Airport extension's own SQL tests (`test/sql/*.test`),
as DuckDB's runner reads and judges them, for any DuckDB Python with the extension built for
it. It imports nothing but the standard library and duckdb, so the test suite can run it
under another virtual environment's DuckDB (1.5 beside 1.4) as a child process:

    python runner.py FILE --extension PATH [--extension-dir DIR] --server grpc://…

It prints one JSON object: the records run, passed and failed (line, SQL, why).

What it follows of DuckDB's runner (test/sqlite/sqllogic_test_runner.cpp, result_helper.cpp):
records are separated by blank lines; `statement ok` must run, `statement error` must fail
(and its error contain the text after `----`); `query <types>` must give as many columns as
it has type letters and the rows after `----` (tab-separated, or one value a line), values
rendered as DuckDB casts them to VARCHAR, NULL as `NULL`, '' as `(empty)`; a value whose text
differs still matches when the expected text cast to the column's type equals it (so `1`
matches `true`, `17 ` matches 17), floating-point values within DuckDB's 1% tolerance.
`require` loads what the file names; `require-env` takes the variable; ${NAME} is replaced by
it. A record after a failed one still runs, as DuckDB's runner goes on with `--continue`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import duckdb

TEMP = "__sqllogic_result"
FLOATING = ("FLOAT", "DOUBLE", "REAL")


@dataclass
class Record:
    line: int
    kind: str  # statement_ok, statement_error, query, require, require_env
    sql: str = ""
    args: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    has_expected: bool = False


def parse(text: str) -> list[Record]:
    """The file's records (comments and blank-line separation as DuckDB's parser)."""
    lines = text.splitlines()
    records: list[Record] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        words = stripped.split()
        head, start = words[0], i + 1
        i += 1
        if head in ("require", "require-env"):
            records.append(Record(start, head.replace("-", "_"), args=words[1:]))
            continue
        if head not in ("statement", "query"):
            raise ValueError(f"line {start}: unknown command {head!r}")
        sql_lines: list[str] = []
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            sql_lines.append(lines[i])
            i += 1
        record = Record(start, "", sql="\n".join(sql_lines).strip())
        if head == "statement":
            record.kind = "statement_ok" if words[1] == "ok" else "statement_error"
        else:
            record.kind = "query"
            record.args = words[1:]
        if i < len(lines) and lines[i].strip() == "----":
            record.has_expected = True
            i += 1
            while i < len(lines) and lines[i].strip():
                record.expected.append(lines[i])
                i += 1
        records.append(record)
    return records


class Runner:
    def __init__(self, extension: str, extension_dir: str | None) -> None:
        self.extension = extension
        config = {"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"}
        if extension_dir:
            config["extension_directory"] = extension_dir
        self.con = duckdb.connect(config=config)
        self.env: dict[str, str] = {}

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{(\w+)\}", lambda m: self.env.get(m.group(1), m.group(0)), text)

    def require(self, what: str) -> str | None:
        """Load what a `require` names; None when loaded, else why not."""
        try:
            if what == "airport":
                self.con.execute(f"LOAD '{self.extension}'")
            else:
                self.con.execute(f"LOAD {what}")
        except duckdb.Error as error:
            return f"require {what}: {error}"
        return None

    def run(self, record: Record) -> str | None:
        """None when the record passes, else why it failed."""
        sql = self.substitute(record.sql)
        if record.kind == "statement_ok":
            try:
                self.con.execute(sql)
            except duckdb.Error as error:
                return f"statement failed: {error}"
            return None
        if record.kind == "statement_error":
            try:
                self.con.execute(sql)
            except duckdb.Error as error:
                wanted = self.substitute("\n".join(record.expected)).strip()
                if wanted and wanted not in str(error):
                    return f"wrong error: {error} (expected it to contain {wanted!r})"
                return None
            return "statement ran, an error was expected"
        return self.query(record, sql)

    def query(self, record: Record, sql: str) -> str | None:
        try:
            types, rows = self.result(sql)
        except duckdb.Error as error:
            return f"query failed: {error}"
        columns = len(record.args[0]) if record.args else len(types)
        if len(types) != columns:
            return f"wrong column count: {len(types)} columns, the test says {columns}"
        expected = [self.substitute(line).split("\t") for line in record.expected]
        if expected and all(len(row) == 1 for row in expected) and columns > 1:
            values = [row[0] for row in expected]  # one value a line
            if len(values) % columns:
                return f"expected {len(values)} values, not a multiple of {columns} columns"
            expected = [values[j : j + columns] for j in range(0, len(values), columns)]
        if len(expected) != len(rows):
            return f"wrong row count: {len(rows)} rows {_shown(rows)}, expected {len(expected)}"
        for n, (want, got) in enumerate(zip(expected, rows, strict=True)):
            if len(want) != columns:
                return f"expected row {n + 1} has {len(want)} values, not {columns}"
            for c in range(columns):
                if not self.same(want[c], got[c], types[c]):
                    return (
                        f"row {n + 1} column {c + 1}: got {got[c]!r}, expected {want[c]!r}"
                        f" (type {types[c]}) {_shown(rows)}"
                    )
        return None

    def result(self, sql: str) -> tuple[list[str], list[list[str]]]:
        """The query's column types and rows as DuckDB renders them (VARCHAR casts). A SELECT
        is run once into a temporary table (DuckDB keeps its order), which is then read
        back cast; a statement that cannot be (DML with RETURNING) is fetched through Arrow
        and cast from there."""
        self.con.execute(f"DROP TABLE IF EXISTS temp.{TEMP}")
        try:
            self.con.execute(f"CREATE TEMP TABLE {TEMP} AS {sql.rstrip().rstrip(';')}")
            source = f"temp.{TEMP}"
        except duckdb.ParserException:
            arrow = self.con.execute(sql).fetch_arrow_table()
            self.con.register(TEMP, arrow)
            source = TEMP
        try:
            described = self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
            types = [str(row[1]) for row in described]
            if not types:
                return [], []
            cast = ", ".join(f"CAST(#{i + 1} AS VARCHAR)" for i in range(len(types)))
            fetched = self.con.execute(f"SELECT {cast} FROM {source}").fetchall()
        finally:
            if source == TEMP:
                self.con.unregister(TEMP)
            else:
                self.con.execute(f"DROP TABLE IF EXISTS temp.{TEMP}")
        rows = [
            ["NULL" if v is None else "(empty)" if v == "" else v for v in row] for row in fetched
        ]
        return types, rows

    def same(self, want: str, got: str, sql_type: str) -> bool:
        if want == got:
            return True
        if want == "NULL" or got == "NULL":
            return False
        want_text = "" if want == "(empty)" else want
        got_text = "" if got == "(empty)" else got
        if sql_type.upper() in FLOATING:
            try:
                left, right = float(want_text), float(got_text)
            except ValueError:
                return False
            return abs(left - right) <= abs(right) * 0.01 + 1e-8
        try:
            equal = self.con.execute(
                f"SELECT TRY_CAST($1 AS {sql_type}) = TRY_CAST($2 AS {sql_type})",
                [want_text, got_text],
            ).fetchone()
        except duckdb.Error:
            return False
        return bool(equal and equal[0])


def _shown(rows: list[list[str]]) -> str:
    text = json.dumps(rows[:6])
    return text if len(text) < 300 else text[:300] + "…"


def run_file(path: str, extension: str, extension_dir: str | None, server: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as source:
        records = parse(source.read())
    runner = Runner(extension, extension_dir)
    runner.env["AIRPORT_TEST_SERVER"] = server
    failures: list[dict[str, Any]] = []
    run = passed = 0
    for record in records:
        if record.kind == "require":
            why = runner.require(record.args[0])
            if why:
                return {
                    "run": run,
                    "passed": passed,
                    "failures": [{"line": record.line, "why": why}],
                }
            continue
        if record.kind == "require_env":
            runner.env.setdefault(record.args[0], os.environ.get(record.args[0], ""))
            continue
        run += 1
        why = runner.run(record)
        if why is None:
            passed += 1
        else:
            failures.append({"line": record.line, "sql": record.sql[:300], "why": why[:600]})
    return {"run": run, "passed": passed, "failures": failures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--extension", required=True)
    parser.add_argument("--extension-dir", default=None)
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    os.environ.setdefault("QUERY_FARM_TELEMETRY_OPT_OUT", "1")
    print(json.dumps(run_file(args.file, args.extension, args.extension_dir, args.server)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

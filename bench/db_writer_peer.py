#!/usr/bin/env python3
"""Python peer of db_writer_benchmark: the reference profiler's way of writing the same rows.

Before the timer: reads PYTORCH_API, TASK and STRING_IDS (in rowid order) out of the DB that
gpuprof's ProfileWriter just wrote, so the values are identical to the writer's by construction.

Timed: connect, the DB_SPEC DDL of those three tables (read from src/db/schema.sql, the DDL source
the writer embeds; --schema names another), then each table written the way torch_npu's
DbManager.insert_data_into_table does it (Ascend/pytorch
torch_npu/profiler/analysis/prof_common_func/_db_manager.py): "insert into T values (?, ...)" with
cursor.executemany over 10,000-row slices and conn.commit() after each slice, on a connection with
Python's default settings (rollback journal, synchronous=FULL). TASK's index is created after the
load, as gpuprof's writer does (cheaper than maintaining it during the load, so this favours the
peer). Ends with close().

The peer does less than the writer: no string interning, no COMPUTE_TASK_INFO, no derived tables,
no enum/metadata tables. Its rows/s is therefore an upper bound for a Python writer of these rows.

With --all-tables the peer copies every table of the writer's file instead (same DDL, read from
its sqlite_master; indexes created after the load), so it writes exactly the rows the writer
wrote, COMPUTE_TASK_INFO and the derived tables included, still without interning or deriving
anything; rows= then counts every row written.

Prints one machine-readable line:
  peer-result rows=<PYTORCH_API+TASK, or all rows> string_ids=<n> seconds=<s> bytes=<file size>
"""

import argparse
import os
import sqlite3
import sys
import time

INSERT_SIZE = 10000  # torch_npu DbManager.INSERT_SIZE

# The one DDL source, src/db/schema.sql (the writer embeds it; the peer reads it from the tree).
DEFAULT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "db", "schema.sql")


def schema_statements(path):
    """{part: [statement, ...]} of schema.sql: parts start at a line "-- [name]", statements end with
    ';' at the end of a line; comment lines are dropped."""
    parts, part, statement = {}, None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("-- [") and line.endswith("]"):
                part = line[4:-1]
                parts[part] = []
                continue
            if part is None or line.startswith("--") or not line.strip():
                continue
            statement.append(line.strip())
            if line.rstrip().endswith(";"):
                parts[part].append(" ".join(statement)[:-1])
                statement = []
    return parts


def peer_ddl(path, tables, index):
    """The CREATE TABLE statements of `tables` and the CREATE INDEX of `index`, from schema.sql."""
    parts = schema_statements(path)
    ddl = {}
    for sql in parts.get("format-tables", []):
        name = sql.split("(")[0].split()[-1]
        if name in tables:
            ddl[name] = sql
    indexes = [sql for sql in parts.get("format-indexes", []) if sql.split()[5] == index]
    missing = [t for t in tables if t not in ddl] + ([] if indexes else [index])
    if missing:
        raise RuntimeError("{}: no DDL for {}".format(path, ", ".join(missing)))
    return {table: ddl[table] for table in tables}, indexes


TABLES = ("STRING_IDS", "PYTORCH_API", "TASK")


def load_rows(source, all_tables, schema):
    """(table DDL, index DDL, rows per table), in the order the peer writes them."""
    conn = sqlite3.connect("file:{}?mode=ro".format(source), uri=True)
    try:
        if all_tables:
            master = conn.execute("SELECT type, name, sql FROM sqlite_master "
                                  "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
            ddl = {name: sql for kind, name, sql in master if kind == "table"}
            indexes = [sql for kind, _, sql in master if kind == "index"]
        else:
            ddl, indexes = peer_ddl(schema, TABLES, "TaskIndex")
        rows = {}
        for table in ddl:
            if not conn.execute("PRAGMA table_info({})".format(table)).fetchall():
                raise RuntimeError("{}: table {} is missing".format(source, table))
            rows[table] = conn.execute("SELECT * FROM {} ORDER BY rowid".format(table)).fetchall()
        return ddl, indexes, rows
    finally:
        conn.close()


def execute_sql(conn, sql):
    conn.cursor().execute(sql)
    conn.commit()


def insert_data_into_table(conn, table, data):
    """DbManager.insert_data_into_table: executemany per INSERT_SIZE slice, commit per slice."""
    if not data:
        return
    sql = "insert into {} values ({})".format(table, "?, " * (len(data[0]) - 1) + "?")
    index = 0
    while index < len(data):
        conn.cursor().executemany(sql, data[index:index + INSERT_SIZE])
        conn.commit()
        index += INSERT_SIZE


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the DB written by gpuprof's ProfileWriter")
    parser.add_argument("--out", required=True, help="where to write the peer's DB (replaced)")
    parser.add_argument("--schema", default=DEFAULT_SCHEMA,
                        help="the DDL source (default: src/db/schema.sql beside this bench/ directory)")
    parser.add_argument("--all-tables", action="store_true",
                        help="copy every table of the source, not only PYTORCH_API, TASK and STRING_IDS")
    args = parser.parse_args()

    ddl, indexes, rows = load_rows(args.source, args.all_tables, args.schema)
    for suffix in ("", "-journal"):
        if os.path.exists(args.out + suffix):
            os.remove(args.out + suffix)
    total = sum(len(table_rows) for table_rows in rows.values())
    print("peer{}: loaded {:,} rows of {} tables ({:,} PYTORCH_API, {:,} TASK, {:,} STRING_IDS; not timed); "
          "sqlite {}".format(" (all tables)" if args.all_tables else "", total, len(rows),
                             len(rows.get("PYTORCH_API", [])), len(rows.get("TASK", [])),
                             len(rows.get("STRING_IDS", [])), sqlite3.sqlite_version))
    sys.stdout.flush()

    start = time.perf_counter()
    # timeout as torch_npu's DbManager.create_connect_db sets it
    conn = sqlite3.connect(args.out, timeout=2147483, check_same_thread=False)
    for table in ddl:
        execute_sql(conn, ddl[table])
    for table in ddl:
        insert_data_into_table(conn, table, rows[table])
    for index in indexes:
        execute_sql(conn, index)
    conn.close()
    seconds = time.perf_counter() - start

    written = total if args.all_tables else len(rows["PYTORCH_API"]) + len(rows["TASK"])
    print("peer-result rows={} string_ids={} seconds={:.6f} bytes={}".format(
        written, len(rows["STRING_IDS"]), seconds, os.path.getsize(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

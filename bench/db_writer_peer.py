#!/usr/bin/env python3
"""Python peer of db_writer_benchmark: the reference profiler's way of writing the same rows.

Before the timer: reads PYTORCH_API, TASK and STRING_IDS (in rowid order) out of the DB that
gpuprof's ProfileWriter just wrote, so the values are identical to the writer's by construction.

Timed: connect, the DB_SPEC DDL of those three tables, then each table written the way torch_npu's
DbManager.insert_data_into_table does it (Ascend/pytorch
torch_npu/profiler/analysis/prof_common_func/_db_manager.py): "insert into T values (?, ...)" with
cursor.executemany over 10,000-row slices and conn.commit() after each slice, on a connection with
Python's default settings (rollback journal, synchronous=FULL). TASK's index is created after the
load, as gpuprof's writer does (cheaper than maintaining it during the load, so this favours the
peer). Ends with close().

The peer does less than the writer: no string interning, no COMPUTE_TASK_INFO, no derived tables,
no enum/metadata tables. Its rows/s is therefore an upper bound for a Python writer of these rows.

Prints one machine-readable line:
  peer-result rows=<PYTORCH_API+TASK> string_ids=<n> seconds=<s> bytes=<file size>
"""

import argparse
import os
import sqlite3
import sys
import time

INSERT_SIZE = 10000  # torch_npu DbManager.INSERT_SIZE

# DB_SPEC.md "Exact DDL" for the tables the peer writes.
DDL = {
    "STRING_IDS": "CREATE TABLE IF NOT EXISTS STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)",
    "PYTORCH_API": (
        "CREATE TABLE IF NOT EXISTS PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, "
        "connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, "
        "inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER)"
    ),
    "TASK": (
        "CREATE TABLE IF NOT EXISTS TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, "
        "connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, "
        "contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER)"
    ),
}
TASK_INDEX = "CREATE INDEX IF NOT EXISTS TaskIndex ON TASK (startNs, globalTaskId)"
TABLES = ("STRING_IDS", "PYTORCH_API", "TASK")


def load_rows(source):
    conn = sqlite3.connect("file:{}?mode=ro".format(source), uri=True)
    try:
        rows = {}
        for table in TABLES:
            columns = [row[1] for row in conn.execute("PRAGMA table_info({})".format(table))]
            if not columns:
                raise RuntimeError("{}: table {} is missing".format(source, table))
            rows[table] = conn.execute("SELECT * FROM {} ORDER BY rowid".format(table)).fetchall()
        return rows
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
    args = parser.parse_args()

    rows = load_rows(args.source)
    for suffix in ("", "-journal"):
        if os.path.exists(args.out + suffix):
            os.remove(args.out + suffix)
    print("peer: loaded {:,} PYTORCH_API, {:,} TASK, {:,} STRING_IDS rows (not timed); sqlite {}".format(
        len(rows["PYTORCH_API"]), len(rows["TASK"]), len(rows["STRING_IDS"]), sqlite3.sqlite_version))
    sys.stdout.flush()

    start = time.perf_counter()
    # timeout as torch_npu's DbManager.create_connect_db sets it
    conn = sqlite3.connect(args.out, timeout=2147483, check_same_thread=False)
    for table in TABLES:
        execute_sql(conn, DDL[table])
    for table in TABLES:
        insert_data_into_table(conn, table, rows[table])
    execute_sql(conn, TASK_INDEX)
    conn.close()
    seconds = time.perf_counter() - start

    written = len(rows["PYTORCH_API"]) + len(rows["TASK"])
    print("peer-result rows={} string_ids={} seconds={:.6f} bytes={}".format(
        written, len(rows["STRING_IDS"]), seconds, os.path.getsize(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Pipelining: several COM_QUERY packets written in one TCP send before reading any answer, as
MariaDB Connector/J does on connect ("set autocommit=1, sql_mode=..." and "SELECT
@@max_allowed_packet,...") and as pipelining drivers do. Every answer must belong to its query.

usage: pipelining_check.py PORT ROUNDS
Prints `pipelined=<rounds that answered correctly>/<rounds>` and, for the first wrong answer,
`first_wrong=<details>`, then `done`.
"""
import struct
import sys

import pymysql
from pymysql.connections import MySQLResult

port, rounds = int(sys.argv[1]), int(sys.argv[2])
conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="123456",
                       database="TESTDB", autocommit=True)
with conn.cursor() as cur:
    cur.execute("INSERT INTO travelrecord (id, user_id) VALUES (1, 'alice'), (5000001, 'bob 中文'), "
                "(10000001, 'carol 🐬'), (10000002, 'dave')")


def packet(payload):
    return struct.pack("<I", len(payload))[:3] + b"\x00" + payload


queries = [
    ("SELECT id, user_id FROM travelrecord WHERE id = 5000001", ((5000001, "bob 中文"),)),
    ("SELECT COUNT(*) FROM travelrecord", ((4,),)),
    ("SELECT user_id FROM travelrecord WHERE id = 10000001", (("carol 🐬",),)),
]
good = 0
first_wrong = None
for i in range(rounds):
    conn._sock.sendall(b"".join(packet(b"\x03" + q.encode()) for q, _ in queries))
    answers = []
    try:
        for q, want in queries:
            conn._next_seq_id = 1
            r = MySQLResult(conn)
            r.read()
            answers.append(r.rows if r.rows is not None else f"no result set (OK: affected_rows={r.affected_rows} message={r.message!r} field_count={r.field_count})")
    except Exception as e:  # noqa: BLE001 - reported
        first_wrong = first_wrong or f"round {i}: {type(e).__name__} {e}"
        print(f"pipelined={good}/{rounds}", flush=True)
        print(f"first_wrong={first_wrong}", flush=True)
        print("done", flush=True)
        sys.exit(0)
    if all(not isinstance(a, str) and tuple(a) == w for a, (_, w) in zip(answers, queries)):
        good += 1
    elif first_wrong is None:
        first_wrong = f"round {i}: {answers}"
print(f"pipelined={good}/{rounds}", flush=True)
if first_wrong:
    print(f"first_wrong={first_wrong}", flush=True)
print("done", flush=True)

"""Client-matrix script for the Python DB-API drivers (tests/client_matrix.rs).

usage: dbapi_check.py DRIVER PORT [key=value ...]
  DRIVER: pymysql | mysqlclient | connector
  extra key=value pairs are passed to the driver's connect() (for connector: auth_plugin=...)

Connects to the gateway with the driver's default settings and runs the matrix steps against
TESTDB.travelrecord (sharded by id range: <5M dn1, <10M dn2, <15M dn3). Every step prints one
line `step=observed value`; a step that raises prints `step=ERROR <class> <errno> <message>`
and the script goes on, so the test sees every failing step at once. The expected transcript is
in tests/client_matrix.rs.
"""
import sys
import traceback

driver, port = sys.argv[1], int(sys.argv[2])
extra = {k: {"True": True, "False": False}.get(v, v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}

if driver == "pymysql":
    import pymysql as db

    def connect():
        return db.connect(host="127.0.0.1", port=port, user="root", password="123456",
                          database="TESTDB", **extra)
elif driver == "mysqlclient":
    import MySQLdb as db

    def connect():
        return db.connect(host="127.0.0.1", port=port, user="root", password="123456",
                          database="TESTDB", **extra)
elif driver == "connector":
    import mysql.connector as db

    def connect():
        return db.connect(host="127.0.0.1", port=port, user="root", password="123456",
                          database="TESTDB", **extra)
else:
    raise SystemExit("unknown driver " + driver)

UNICODE = "emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ"


def errno_of(e):
    if isinstance(getattr(e, "errno", None), int):
        return e.errno
    if e.args and isinstance(e.args[0], int):
        return e.args[0]
    return None


def step(name, fn):
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - reported, not swallowed
        msg = str(e).replace("\n", " ")
        print(f"{name}=ERROR {type(e).__module__}.{type(e).__name__} {errno_of(e)} {msg}", flush=True)
        traceback.print_exc(file=sys.stderr)
        return None
    print(f"{name}={value}", flush=True)
    return value


def fmt(rows):
    return ";".join("|".join("NULL" if v is None else str(v) for v in r) for r in rows)


conn = None


def do_connect():
    global conn
    conn = connect()
    return "ok"


if step("connect", do_connect) is None:
    sys.exit(0)
cur = conn.cursor()


def insert():
    rows = [
        (1, "alice", "10.50", 1),
        (5000001, "bob 中文", "20.25", 2),
        (10000001, "carol 🐬", "30.00", 3),
        (10000002, "dave", "40.00", 4),
    ]
    n = 0
    for r in rows:
        cur.execute("INSERT INTO travelrecord (id, user_id, fee, days) VALUES (%s, %s, %s, %s)", r)
        n += cur.rowcount
    conn.commit()
    return n


def by_key():
    out = []
    for k in (5000001, 10000001):
        cur.execute("SELECT id, user_id, fee, days FROM travelrecord WHERE id = %s", (k,))
        out += cur.fetchall()
    return fmt(out)


def order_limit():
    cur.execute("SELECT id, user_id FROM travelrecord ORDER BY id DESC LIMIT %s", (3,))
    return fmt(cur.fetchall())


def aggregate():
    cur.execute("SELECT COUNT(*), SUM(fee), SUM(days) FROM travelrecord")
    return fmt(cur.fetchall())


def count():
    cur.execute("SELECT COUNT(*) FROM travelrecord")
    return cur.fetchone()[0]


def tx_commit():
    # DB-API default: autocommit off, so these run in one transaction up to commit()
    cur.execute("INSERT INTO travelrecord (id, user_id, fee, days) VALUES (%s, %s, %s, %s)", (2, "tx", "1.00", 1))
    cur.execute("INSERT INTO travelrecord (id, user_id, fee, days) VALUES (%s, %s, %s, %s)", (5000002, "tx", "1.00", 1))
    conn.commit()
    return count()


def tx_rollback():
    cur.execute("INSERT INTO travelrecord (id, user_id) VALUES (%s, %s)", (3, "gone"))
    cur.execute("INSERT INTO travelrecord (id, user_id) VALUES (%s, %s)", (10000003, "gone"))
    cur.execute("UPDATE travelrecord SET user_id = %s WHERE id = %s", ("changed", 1))
    inside = f"{count()}|{fetch_user(1)}"
    conn.rollback()
    return f"{inside}|{count()}|{fetch_user(1)}"


def fetch_user(k):
    cur.execute("SELECT user_id FROM travelrecord WHERE id = %s", (k,))
    return cur.fetchone()[0]


def unicode_roundtrip():
    cur.execute("INSERT INTO travelrecord (id, user_id) VALUES (%s, %s)", (5000007, UNICODE))
    conn.commit()
    got = fetch_user(5000007)
    cur.execute("SELECT CHAR_LENGTH(user_id), LENGTH(user_id) FROM travelrecord WHERE id = %s", (5000007,))
    chars, octets = cur.fetchone()
    return f"{got}|{'same' if got == UNICODE else 'DIFFERENT'}|{chars}|{octets}"


def duplicate():
    try:
        cur.execute("INSERT INTO travelrecord (id, user_id) VALUES (%s, %s)", (10000001, "dup"))
    except db.IntegrityError as e:
        conn.rollback()
        return f"IntegrityError {errno_of(e)}"
    return "no error"


def after_error():
    return fetch_user(10000001)


step("insert", insert)
step("by_key", by_key)
step("order_limit", order_limit)
step("aggregate", aggregate)
step("tx_commit", tx_commit)
step("tx_rollback", tx_rollback)
step("unicode", unicode_roundtrip)
step("duplicate", duplicate)
step("after_error", after_error)
if driver == "connector":
    # the binary protocol: a server-side prepared statement with the shard key bound
    def prepared():
        pc = conn.cursor(prepared=True)
        out = []
        for k in (1, 5000007, 10000002):
            pc.execute("SELECT id, user_id, fee FROM travelrecord WHERE id = %s", (k,))
            out += pc.fetchall()
        pc.close()
        return fmt(out)

    step("prepared", prepared)
conn.close()
print("done", flush=True)

#!/usr/bin/env python3
"""Runs MariaDB mysql-test `main/` files with mysqltest (mariadb-test), directly against a
MariaDB server and through a manx gateway, and writes one row per file to results.tsv.

Each file runs on a fresh `test` database (every database but the server's own is dropped
first, over the admin socket); a file is run through manx only when it passed directly.
A file that stops the server (none of the listed ones should) gets the server restarted with
--restart-cmd and is reported as `server-died`.

Called by scripts/conformance.sh; usable alone:
  mysqltest_run.py --tests a,b,c | --list FILE [--every N] --socket S --direct-port P
                   [--manx-port M] --out DIR [--restart-cmd CMD]
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import time

import pymysql

MTR = "/usr/share/mysql/mysql-test"
SYSTEM_DBS = {"mysql", "information_schema", "performance_schema", "sys"}
# The Python suites' databases are theirs to reset.
SYSTEM_DBS |= {"test1", "test2", "test_schema", "test_schema_2"}


def admin(sock):
    return pymysql.connect(unix_socket=sock, user="root", password="", autocommit=True)


def reset(sock):
    c = admin(sock)
    try:
        cur = c.cursor()
        cur.execute("SHOW DATABASES")
        for (db,) in cur.fetchall():
            if db.lower() not in SYSTEM_DBS:
                cur.execute("DROP DATABASE `%s`" % db.replace("`", "``"))
        cur.execute("CREATE DATABASE test")
        # mysql-test-run's own helper (include/mtr_warnings.sql), which tests call to declare
        # the server log lines they expect; no log is checked here, so it does nothing.
        cur.execute("CREATE DATABASE mtr")
        cur.execute("CREATE PROCEDURE mtr.add_suppression(pattern VARCHAR(255)) BEGIN END")
    finally:
        c.close()


def alive(sock):
    try:
        admin(sock).close()
        return True
    except Exception:
        return False


def run_one(name, port, vardir, logdir, timeout):
    """Returns (status, seconds, message, log text): status pass|fail|skip|timeout."""
    os.makedirs(os.path.join(vardir, "tmp"), exist_ok=True)
    os.makedirs(logdir, exist_ok=True)
    client = f"--no-defaults -uroot -h127.0.0.1 -P{port} --protocol=tcp"
    env = dict(os.environ)
    env.update(
        MYSQL_TEST_DIR=MTR,
        MYSQLTEST_VARDIR=vardir,
        MYSQL_TMP_DIR=os.path.join(vardir, "tmp"),
        MYSQL_CHARSETSDIR="/usr/share/mysql/charsets",
        MASTER_MYPORT=str(port),
        MASTER_MYSOCK=os.path.join(vardir, "no.sock"),
        MYSQL=f"mariadb {client}",
        MYSQL_DUMP=f"mariadb-dump {client}",
        MYSQL_SHOW=f"mariadb-show {client}",
        MYSQLADMIN=f"mariadb-admin {client}",
        MYSQL_BINLOG="mariadb-binlog",
        MYSQL_CLIENT_TEST="mariadb-client-test",
    )
    cmd = [
        "mariadb-test", "--no-defaults", f"--basedir={MTR}/", "--host=127.0.0.1",
        f"--port={port}", "--protocol=tcp", "--user=root", "--database=test",
        f"--tmpdir={vardir}/tmp", f"--logdir={logdir}", "--silent",
        "--max-connect-retries=3",
        f"--test-file={MTR}/main/{name}.test", f"--result-file={MTR}/main/{name}.result",
    ]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, cwd=MTR)
        out = p.stdout.decode("utf-8", "replace")
        rc = p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        rc = None
    secs = time.monotonic() - t0
    logf = os.path.join(logdir, name + ".log")
    log = ""
    if os.path.exists(logf):
        with open(logf, encoding="utf-8", errors="replace") as f:
            log = f.read()
    if rc is None:
        return "timeout", secs, f"timeout after {timeout} s", out, log
    if rc == 0:
        return "pass", secs, "", out, log
    if rc == 62:
        return "skip", secs, last_line(out), out, log
    msg = ""
    for line in out.splitlines():
        if line.startswith("mysqltest:") and "At line" in line:
            msg = line
            break
    if not msg:
        msg = "Result content mismatch" if "Result content mismatch" in out else last_line(out)
    return "fail", secs, msg, out, log


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip() and l.strip() != "not ok"]
    return lines[-1] if lines else ""


def result_diff(name, log):
    with open(f"{MTR}/main/{name}.result", encoding="utf-8", errors="replace") as f:
        want = f.read().splitlines()
    got = log.splitlines()
    return "\n".join(difflib.unified_diff(want, got, "expected", "through manx", lineterm="", n=2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list")
    ap.add_argument("--tests")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--direct-port", type=int, required=True)
    ap.add_argument("--manx-port", type=int)
    ap.add_argument("--vardir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--restart-cmd")
    a = ap.parse_args()
    a.out, a.vardir, a.socket = map(os.path.abspath, (a.out, a.vardir, a.socket))

    if a.tests:
        names = a.tests.split(",")
    else:
        with open(a.list) as f:
            names = [l.split("#")[0].strip() for l in f]
        names = [n for n in names if n]
    names = names[:: a.every]
    os.makedirs(a.out, exist_ok=True)
    detail = os.path.join(a.out, "details")
    shutil.rmtree(detail, ignore_errors=True)
    os.makedirs(detail)
    rows = []
    rewrite(a.out, rows)
    started = time.monotonic()
    for i, name in enumerate(names):
        broken = not alive(a.socket)
        if not broken:
            try:
                reset(a.socket)
            except pymysql.MySQLError:
                broken = True   # e.g. sp-destruct leaves mysql.proc damaged
        if broken:
            # the previous file broke the server (stopped it, emptied mysql.user, damaged a
            # system table): a fresh installation, and that file is not counted
            if not a.restart_cmd:
                sys.exit("the MariaDB server is broken and no --restart-cmd")
            subprocess.run(a.restart_cmd, shell=True, check=True)
            if rows:
                rows[-1][1] = "server-broken"
                rewrite(a.out, rows)
            reset(a.socket)
        d_status, d_secs, d_msg, d_out, _ = run_one(
            name, a.direct_port, a.vardir, os.path.join(a.out, "log-direct"), a.timeout)
        m_status, m_secs, m_msg = "-", 0.0, ""
        if d_status == "pass" and a.manx_port:
            reset(a.socket)
            m_timeout = int(min(max(30, 6 * d_secs), 4 * a.timeout))
            m_status, m_secs, m_msg, m_out, m_log = run_one(
                name, a.manx_port, a.vardir, os.path.join(a.out, "log-manx"), m_timeout)
            if m_status != "pass":
                with open(os.path.join(detail, name + ".txt"), "w") as f:
                    f.write(f"# {name}: {m_status} through manx ({m_secs:.1f} s)\n{m_msg}\n\n")
                    f.write("## mysqltest output\n" + m_out + "\n")
                    if m_status == "fail" and "Result content mismatch" in (m_msg + m_out):
                        f.write("## diff\n" + result_diff(name, m_log) + "\n")
        elif d_status == "fail":
            m_msg = ""
        rows.append([name, d_status, m_status, f"{d_secs:.2f}", f"{m_secs:.2f}",
                     (m_msg if m_status not in ("pass", "-") else d_msg if d_status != "pass" else "")
                     .replace("\t", " ").replace("\n", " ")[:1000]])
        with open(os.path.join(a.out, "results.tsv"), "a") as f:
            f.write("\t".join(rows[-1]) + "\n")
        if (i + 1) % 25 == 0:
            print(f"[mysqltest] {i + 1}/{len(names)} files, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
    if a.restart_cmd:
        try:
            reset(a.socket)
        except pymysql.MySQLError:
            subprocess.run(a.restart_cmd, shell=True, check=True)
            rows[-1][1] = "server-broken"
    rewrite(a.out, rows)


def rewrite(out, rows):
    with open(os.path.join(out, "results.tsv"), "w") as f:
        f.write("test\tdirect\tmanx\tdirect_s\tmanx_s\terror\n")
        for r in rows:
            f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()

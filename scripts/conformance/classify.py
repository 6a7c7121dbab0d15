#!/usr/bin/env python3
"""Reads the conformance suites' outputs under target/conformance/, classifies every test that
passes directly but not through manx, and prints the summary (Markdown).

Inputs (written by scripts/conformance.sh):
  mysqltest/results.tsv                       mysqltest_run.py: test, direct, manx, ..., error
  mysqltest/details/<test>.txt                its output through manx (diffs of mismatches)
  pymysql/direct.xml, pymysql/manx.xml        pytest JUnit XML, one per target
  sqlalchemy/direct.xml, sqlalchemy/manx.xml
Outputs: <suite>/losses.tsv (test, class, reason, message) and the summary on stdout.

The classes (by the error number and text the suite reports; first match wins):
  protocol      connection dropped or refused, packet errors, hangs (timeouts)
  refused       refused by design: manx's own 1227 (SET GLOBAL, FLUSH, accounts, ...), 1235
                (session variables outside the allow-list, what the boundary does not pass),
                1064 naming a statement kind the gateway does not forward (stored programs,
                LOCK TABLES, PREPARE FROM @var / EXECUTE IMMEDIATE @var, HANDLER, ...), other
                databases (1049/1044/1142). Only manx's own refusal counts: a statement of a
                refused kind that the parser cannot read is answered with that refusal too
                (admit::unread_refusal), so sqlparser's 1064 is always a parser gap, never by
                design. PREPARE / EXECUTE IMMEDIATE of a string literal is forwarded (its text
                routed as the client's), so its losses fall in other classes.
  parser        1064 from sqlparser ("sql parser error: ...") on a statement MariaDB accepts
  state         session state lost between statements: temporary tables, user variables,
                locks, savepoints, prepared statements
  unsupported   manx's 1064 "... not supported yet" (statements over several schemas, ...):
                a feature gap, not a security rule
  wrong         the statement ran but the answer differs: result, metadata, another error
  version       (pytest suites) skipped through manx although run directly: the only input to
                the suites' skip decisions that can differ is the server's identity (greeting
                and version probes); the gateway announces the server's own greeting
                (fakeMySQLVersion), so none are expected
  other         anything else
"""
import argparse
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET

CLASSES = ["parser", "refused", "unsupported", "wrong", "protocol", "state", "version", "other"]
CLASS_NAMES = {
    "parser": "parser gap (sqlparser 1064)",
    "refused": "refused by design",
    "unsupported": "not supported yet (manx's own refusal, not a security rule)",
    "wrong": "wrong answer or metadata",
    "protocol": "protocol (connection, packets, hang)",
    "state": "session state lost",
    "version": "skipped through manx only: the client sees another server version",
    "other": "other",
}
SUITE_NAMES = {
    "mysqltest": "MariaDB mysql-test main/",
    "pymysql": "PyMySQL tests",
    "sqlalchemy": "SQLAlchemy dialect/mysql + sql",
}

ERR_RE = re.compile(r"\((\d{4}),\s*(['\"])(.*?)\2\)", re.S)  # PyMySQL: (1064, 'msg')
MT_ERR_RE = re.compile(r"failed(?: with wrong errno)?:? (?:ER_\w+|\d+) \((\d+)\): '?(.*)")


def normalize(msg):
    msg = re.sub(r" at Line: \d+, Column: \d+", "", msg)
    msg = re.sub(r"at byte \d+", "at byte N", msg)
    msg = re.sub(r"0x[0-9a-f]+", "0x..", msg)
    msg = re.sub(r"\s+", " ", msg).strip()
    return msg[:220]


# The end of manx's 1235 refusing a SET value it does not evaluate (src/route/set/): mysqltest
# prints only the SQLSTATE (42000) of an error in a result file, so the text says whose it is.
MANX_1235 = "(a value is a literal or an expression over no table)"


def classify(code, msg, text=""):
    """(class, reason) for an error number (or None) and its message."""
    m = msg or ""
    low = (m + " " + text).lower()
    if code in (2006, 2013, 2014, 2026, 2027, 1153, 1156, 1157, 1158, 1159, 1160, 1161) or any(
        k in low
        for k in ("lost connection", "server has gone away", "packets out of order",
                  "packet sequence", "brokenpipe", "connectionreset", "connection reset",
                  "malformed packet", "timeout after", "can't connect", "connection refused",
                  "commands out of sync", "interfaceerror")
    ):
        return "protocol", "connection / packets / hang"
    if code == 1064 and "sql parser error" in m:
        return "parser", "sqlparser refuses it"
    if code == 1064 and "transaction statement not supported: BEGIN NOT ATOMIC" in m:
        return "refused", "statement kind not forwarded (BEGIN NOT ATOMIC compound statement)"
    if code == 1300 and "gateway" in m:
        return "unsupported", "statements in another character set than UTF-8"
    if code in (1267, 1253, 1271, 1270):
        return "state", "the handshake's character set is not applied (the session runs utf8mb4)"
    if code == 1064 and "table maintenance syntax not understood" in m:
        # CHECK / CHECKSUM / ANALYZE / OPTIMIZE / REPAIR TABLE are forwarded (README
        # "Security"): a form the gateway's reader misses is a gap, not a rule.
        return "unsupported", "a table maintenance form the gateway does not read"
    if code == 1064 and "not supported yet" in m:
        return "unsupported", re.sub(r"\(.*", "", m).strip()
    if code == 1064 and "not supported by the gateway" in m:
        kind = m.split(" is not supported")[0]
        return "refused", f"statement kind not forwarded ({kind})"
    if code == 1227 and "gateway" in m:
        what = re.sub(r"Access denied; (.*?) is not (available|allowed).*", r"\1", m)
        if "SET GLOBAL" in m:
            what = "SET GLOBAL"
        return "refused", f"1227 {what}"
    if code == 1235 and re.search(r"function (st_|json_|uncompressed_length|weight_string)\w* is not one of", m, re.I):
        return "unsupported", "a MariaDB built-in function missing from manx's list"
    if code == 1235:
        if "session variable" in m:
            return "refused", "1235 session variable outside the allow-list"
        # Limitations, not rules a gateway must keep: client character sets issue 18 asks
        # for, a query as a SET value, SQL PREPARE or EXPLAIN EXTENDED of what does not run on
        # one dataNode as written.
        for what in ("client character set", "SET STATEMENT", "PREPARE of a statement",
                     "is answered by the backend only"):
            if what in m:
                return "unsupported", "1235 " + re.sub(r"'[^']*'", "'…'", m)[:80]
        if re.match(r"SET @?\w+ = \(", m) or ": a query (a value is" in m:
            return "unsupported", "1235 a query as a SET value"
        return "refused", "1235 " + re.sub(r"'[^']*'", "'…'", m)[:80]
    if code in (1049, 1044, 1142, 1046):
        return "refused", "other databases (%d)" % code
    if code in (1100, 1192, 1305, 1243) or "temporary" in low or "lock tables" in low or "savepoint" in low:
        return "state", "temporary table / lock / savepoint / prepared statement"
    if code is not None or m:
        return "wrong", "another error (%s)" % code if code else "different answer"
    return "other", ""


# --- mysqltest -------------------------------------------------------------------------------

def mysqltest(out):
    path = os.path.join(out, "mysqltest", "results.tsv")
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            rows.append(line.rstrip("\n").split("\t"))
    direct = [r for r in rows if r[1] == "pass"]
    losses = []
    for r in direct:
        name, status, msg = r[0], r[2], r[5]
        if status == "pass":
            continue
        # the whole message (a multi-line query puts the error on a later line)
        det = os.path.join(out, "mysqltest", "details", name + ".txt")
        if os.path.exists(det):
            text = open(det, errors="replace").read().split("## mysqltest output\n", 1)[-1]
            text = text.split("## diff", 1)[0]
            # mysqltest's own "At line" (a result may hold others: "Note 4094 At line 4 in p1")
            at = text.find("mysqltest: At line")
            if at >= 0:
                at += len("mysqltest: ")
                msg = " ".join(text[at:].split("\n\n", 1)[0].split())
        if status == "timeout":
            losses.append((name, "protocol", "hang (mysqltest timeout)", msg))
            continue
        m = MT_ERR_RE.search(msg)
        if m:
            code, emsg = int(m.group(1)), m.group(2)
            cls, reason = classify(code, emsg)
            if cls == "wrong" and code == 1146:
                test = open(f"/usr/share/mysql/mysql-test/main/{name}.test", errors="replace").read().lower()
                if "temporary table" in test:
                    cls, reason = "state", "1146 on a table the test made TEMPORARY"
            losses.append((name, cls, reason, normalize(f"{code}: {emsg}")))
            continue
        if re.search(r"At line \d+: exec of '(mariadb[\w-]*)", msg):
            prog = re.search(r"exec of '(mariadb[\w-]*)", msg).group(1)
            # The program's own error, printed just before mysqltest names the failed exec:
            # the gateway's parser or a by-design refusal is that class, not a wrong answer.
            out_text = ""
            if os.path.exists(det):
                out_text = open(det, errors="replace").read().split("## mysqltest output\n", 1)[-1]
                out_text = out_text.split("\nmysqltest: At line", 1)[0]
            errs = re.findall(r"^ERROR (\d+) \(\w+\)(?: at line \d+)?: (.*)$", out_text, re.M) + \
                re.findall(r"Got error: (\d+): \"?(.*?)\"? when executing", out_text)
            if "when executing 'SELECT INTO OUTFILE'" in out_text:
                losses.append((name, "refused", "SELECT ... INTO OUTFILE (files on the backend host; "
                               f"{prog} --tab)", normalize(f"exec of {prog} failed")))
                continue
            if errs:
                code, emsg = int(errs[-1][0]), errs[-1][1]
                cls, reason = classify(code, emsg)
                if cls in ("parser", "refused", "unsupported"):
                    losses.append((name, cls, f"{reason} (in {prog})", normalize(f"{code}: {emsg}")))
                    continue
            losses.append((name, "wrong", f"a client program ({prog}) fails through manx",
                           normalize(f"exec of {prog} failed")))
            continue
        if "should have failed" in msg:
            losses.append((name, "wrong", "succeeded where MariaDB fails", normalize(msg.split(": ", 2)[-1])))
            continue
        if "Could not open connection" in msg or "connect" in msg.lower() and "failed" in msg:
            code = re.search(r"\((\d+)\)|: (\d{4}) ", msg)
            c = int(next(g for g in code.groups() if g)) if code else None
            cls, reason = classify(c, msg)
            if cls == "wrong":
                cls, reason = "protocol", "could not connect"
            losses.append((name, cls, reason, normalize(msg)))
            continue
        if "mismatch" in msg:
            # an error line that MariaDB did not give is the manx error behind the difference
            det = os.path.join(out, "mysqltest", "details", name + ".txt")
            diff = open(det, errors="replace").read().split("## diff", 1)[-1] if os.path.exists(det) else ""
            lines = diff.splitlines()
            added = [l[1:] for l in lines if l.startswith("+") and not l.startswith("+++")]
            # the first error line the diff adds, with the added lines that continue its message
            # (a multi-line statement quoted in it)
            err = None
            for i, l in enumerate(lines):
                if l.startswith("+ERROR "):
                    more = []
                    for c in lines[i + 1:]:
                        if not c.startswith("+") or c.startswith(("+ERROR ", "+++")):
                            break
                        more.append(c[1:])
                    err = " ".join([l[1:]] + more)
                    break
            if err is None and os.path.exists(det):
                # A client program the file runs (`--exec $MYSQL ...`) writes its errors to
                # mysqltest's output, not to the result: the gateway's own refusal there is
                # the difference (errors MariaDB gives too are in both runs' output alike,
                # so only the gateway's texts are taken).
                out_text = open(det, errors="replace").read().split("## mysqltest output\n", 1)[-1]
                out_text = out_text.split("## diff", 1)[0].split("\n--- ", 1)[0]
                err = next((l for l in out_text.splitlines()
                            if re.match(r"ERROR \d+ \(\w+\)", l) and "gateway" in l), None)
                if err:
                    err = re.sub(r"^ERROR (\d+) \((\w+)\)(?: at line \d+)?: ", r"ERROR \1: ", err)
            if err:
                em = re.match(r"ERROR (?:\d+ \()?(\w+)\)?: (.*)", err)
                text = em.group(2) if em else err
                code = 1064 if ("sql parser error" in text or "not supported by the gateway" in text
                                or "transaction statement not supported" in text) else (
                    1227 if "through the gateway" in text and "Access denied" in text else
                    1235 if "gateway" in text or MANX_1235 in text else None)
                cls, reason = classify(code, text)
                if cls == "wrong":
                    reason = "another error"
                losses.append((name, cls, reason, normalize(text)))
            else:
                first = added[0] if added else ""
                reason = "result differs"
                if any(l.startswith("DATA_NODE") for l in added):
                    reason = "EXPLAIN answered as Mycat's (DATA_NODE, SQL)"
                losses.append((name, "wrong", reason, normalize("result differs: " + first)))
            continue
        if status == "skip" and "Needs stat tables" in msg:
            # include/have_stat_tables.inc counts mysql.table_stats & co. in information_schema:
            # the backend's `mysql` schema is not listed through the gateway, and the files
            # then read and write those tables by name (refused as other databases).
            losses.append((name, "refused", "other databases (1044): the mysql schema's statistics tables",
                           normalize(msg)))
            continue
        cls, reason = classify(None, msg)
        losses.append((name, cls, reason, normalize(msg)))
    return len(rows), len(direct), losses


# --- pytest JUnit XML ------------------------------------------------------------------------

def junit(path):
    """{test id: (outcome, message, text)} with outcome pass|fail|skip."""
    res = {}
    if not os.path.exists(path):
        return res
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return res
    for tc in root.iter("testcase"):
        # SQLAlchemy names its backend test classes after the server: Foo_mariadb+pymysql_10_11_19_0
        cls = re.sub(r"_(mariadb|mysql)\+\w+?_[\d_]+$", "", tc.get("classname", ""))
        tid = cls + "::" + tc.get("name", "")
        outcome, msg, text = "pass", "", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome, msg, text = "fail", child.get("message", ""), child.text or ""
                break
            if child.tag == "skipped":
                outcome, msg = "skip", child.get("message", "")
        res[tid] = (outcome, msg, text)
    return res


def pytest_suite(out, suite):
    d = junit(os.path.join(out, suite, "direct.xml"))
    m = junit(os.path.join(out, suite, "manx.xml"))
    direct = [t for t, v in d.items() if v[0] == "pass"]
    losses = []
    for t in direct:
        outcome, msg, text = m.get(t, ("missing", "not run through manx (the run stopped)", ""))
        if outcome == "pass":
            continue
        if outcome == "skip":
            # the only input to SQLAlchemy's and PyMySQL's skip decisions that differs is the
            # server's identity (greeting and version probes)
            if True:
                losses.append((t, "version", "the client sees another server version through manx",
                               normalize("skipped: " + re.sub(r"^'[^']*' ", "", msg))))
            else:
                losses.append((t, "other", "skipped through manx", normalize("skipped: " + msg)))
            continue
        blob = msg + "\n" + text
        em = ERR_RE.search(blob)
        if em:
            code, emsg = int(em.group(1)), em.group(3)
            cls, reason = classify(code, emsg, "")
            losses.append((t, cls, reason, normalize(f"{code}: {emsg}")))
        else:
            first = msg.splitlines()[0] if msg else (text.strip().splitlines() or [""])[-1]
            cls, reason = classify(None, first, text[-2000:])
            if cls == "other":
                cls, reason = "wrong", "assertion / different answer"
            losses.append((t, cls, reason, normalize(first)))
    return len(d), len(direct), losses


def refusal_group(reason):
    """Coarser names for the by-design refusals, for the summary."""
    r = reason
    if re.search(r"\((CREATE (PROCEDURE|FUNCTION|TRIGGER|EVENT|DEFINER|AGGREGATE)|FOR \w+);", r):
        return "stored programs (CREATE/DROP/CALL, compound statements; incl. mysql-test-run's CALL mtr.add_suppression)"
    if re.search(r"\((PREPARE|EXECUTE)", r):
        return "PREPARE ... FROM, EXECUTE [IMMEDIATE]"
    if "LOCK TABLE" in r:
        return "LOCK TABLES"
    if "EXECUTE IMMEDIATE" in r:
        return "PREPARE ... FROM, EXECUTE [IMMEDIATE]"
    if "mtr.add_suppression" in r or "DROP PROCEDURE" in r or "DROP FUNCTION" in r or "SHOW procedure" in r \
            or "BEGIN NOT ATOMIC" in r or "CALL" in r:
        return "stored programs (CREATE/DROP/CALL, compound statements; incl. mysql-test-run's CALL mtr.add_suppression)"
    if re.search(r"function `?\w+`? is not one of", r):
        return "functions that are not MariaDB built-ins (stored functions)"
    if "write the call of" in r:
        return "a built-in spelled other than NAME( (CURRENT_DATE, CURRENT_TIMESTAMP without parentheses, `ceil (`)"
    if re.search(r"VIEW|CREATE OR|CREATE ALGORITHM", r):
        return "views (CREATE [OR REPLACE] [ALGORITHM=..] VIEW, DROP VIEW)"
    if "DATABASE" in r:
        return "CREATE / DROP DATABASE"
    if "other databases" in r or "information_schema" in r:
        return "other databases (mysql, information_schema by name, unknown schemas)"
    if "FLUSH" in r or "RESET MASTER" in r:
        return "FLUSH, RESET"
    if r.startswith("1227 SHOW") or "PROCESSLIST" in r:
        return "server-level SHOW forms (STATUS, global VARIABLES, PROCESSLIST, CONTRIBUTORS)"
    if "storage engine" in r or "table option" in r:
        return "table options and engines (DATA/INDEX DIRECTORY, CONNECTION, MRG_MYISAM, ENGINE=@@var)"
    if "SET STATEMENT" in r or "sql_mode ORACLE" in r or "character set" in r:
        return "SET STATEMENT ... FOR, sql_mode ORACLE, client character sets"
    if "1227 SET timestamp" in r:
        return "SET timestamp"
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    results = {}
    for s in a.suites:
        if s == "mysqltest":
            results[s] = mysqltest(a.out)
        else:
            results[s] = pytest_suite(a.out, s)
        with open(os.path.join(a.out, s, "losses.tsv"), "w") as f:
            f.write("test\tclass\treason\tmessage\n")
            for row in results[s][2]:
                f.write("\t".join(x.replace("\t", " ") for x in row) + "\n")

    p = print
    if a.note:
        p(a.note + "\n")
    p("| suite | tests run | pass directly | also through manx | % |")
    p("|---|---:|---:|---:|---:|")
    for s, (ran, direct, losses) in results.items():
        ok = direct - len(losses)
        pct = 100.0 * ok / direct if direct else 0.0
        p(f"| {SUITE_NAMES.get(s, s)} | {ran} | {direct} | {ok} | {pct:.1f} |")
    p("\nLosses by class (tests that pass directly and fail through manx):\n")
    p("| class | " + " | ".join(SUITE_NAMES.get(s, s) for s in results) + " | total |")
    p("|---|" + "---:|" * (len(results) + 1))
    for c in CLASSES:
        counts = [sum(1 for l in results[s][2] if l[1] == c) for s in results]
        p(f"| {CLASS_NAMES[c]} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |")
    for s, (ran, direct, losses) in results.items():
        v = sum(1 for l in losses if l[1] == "version")
        if v:
            ok = direct - len(losses)
            p(f"\n{SUITE_NAMES.get(s, s)} without the {v} tests skipped for the server's identity: "
              f"{ok} / {direct - v} = {100.0 * ok / (direct - v):.1f} %")
    p("\nBy-design refusals met (what: tests):\n")
    reasons = collections.Counter(refusal_group(l[2]) for s in results for l in results[s][2] if l[1] == "refused")
    for r, n in reasons.most_common():
        p(f"- {r}: {n}")
    p("\nThe 10 most frequent errors through manx (message: tests; skips not counted):\n")
    msgs = collections.Counter(l[3] for s in results for l in results[s][2] if l[1] != "version")
    for i, (msg, n) in enumerate(msgs.most_common(10), 1):
        p(f"{i}. `{msg}`: {n}")
    p(f"\nPer-test details: {a.out}/<suite>/losses.tsv (and mysqltest/details/, pytest logs).")


if __name__ == "__main__":
    sys.exit(main())

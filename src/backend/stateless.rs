//! Which statements leave nothing behind on a backend connection.
//!
//! A pooled connection used to get a `COM_RESET_CONNECTION` at every checkout: a full round trip
//! per statement, the largest single cost of a point select through the gateway. The reset is
//! only needed when the previous holder may have left session state behind (user variables,
//! `GET_LOCK` locks, temporary tables, session variables, an open transaction, prepared
//! statements, warnings, sequence `LASTVAL`s, `LAST_INSERT_ID(expr)`...). [`is_stateless`] accepts
//! only statements that provably leave none: a plain `SELECT` whose every call is a built-in pure
//! function from a short list, with no `@` (user or system variables), no `INTO`, and no
//! executable comment. Everything else marks the connection for a reset before its next holder.
//!
//! The same test guards the other direction: a statement that is not on the list may *read*
//! session state (`FOUND_ROWS()`, `ROW_COUNT()`, `SHOW WARNINGS`, `@@session...`), so on a
//! connection that served another client since its last reset it runs only after a reset.

use crate::sqltext::quoted_end;

/// Words that may stand before `(` in a stateless statement: SQL keywords that open a
/// parenthesised expression or subquery, and built-in functions without side effects. A stored
/// function is never on it (`db.f(` is refused as a qualified call; built-in names cannot be
/// shadowed by unqualified stored functions in MySQL/MariaDB).
const ALLOWED_BEFORE_PAREN: &[&str] = &[
    // keywords
    "ALL",
    "AND",
    "ANY",
    "AS",
    "BETWEEN",
    "BY",
    "CASE",
    "DISTINCT",
    "ELSE",
    "EXISTS",
    "FROM",
    "HAVING",
    "IN",
    "IS",
    "JOIN",
    "LIKE",
    "NOT",
    "ON",
    "OR",
    "SELECT",
    "SOME",
    "THEN",
    "UNION",
    "USING",
    "WHEN",
    "WHERE",
    "XOR",
    // aggregates and pure built-ins
    "ABS",
    "AVG",
    "CAST",
    "CEIL",
    "CEILING",
    "CHAR_LENGTH",
    "COALESCE",
    "CONCAT",
    "CONCAT_WS",
    "CONVERT",
    "COUNT",
    "DATE",
    "DAY",
    "FLOOR",
    "GREATEST",
    "HEX",
    "IF",
    "IFNULL",
    "LCASE",
    "LEAST",
    "LEFT",
    "LENGTH",
    "LOWER",
    "LTRIM",
    "MAX",
    "MD5",
    "MIN",
    "MOD",
    "MONTH",
    "NULLIF",
    "REPLACE",
    "RIGHT",
    "ROUND",
    "RTRIM",
    "SUBSTR",
    "SUBSTRING",
    "SUM",
    "TRIM",
    "UCASE",
    "UPPER",
    "WEIGHT_STRING",
    "YEAR",
];

/// Whether running `sql` cannot leave session state on the connection, nor depend on state an
/// earlier statement left (see the module docs). Conservative: `false` whenever unsure.
pub fn is_stateless(sql: &str) -> bool {
    let b = sql.as_bytes();
    let mut i = 0;
    let mut first_word = true;
    // The last significant byte before the current position (to spot `db.f(`).
    let mut prev = b' ';
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // Executable comments (`/*!...*/`, `/*M!...*/`) run their content.
                if matches!(b.get(i + 2), Some(b'!') | Some(b'M') | Some(b'm')) {
                    return false;
                }
                match sql[i + 2..].find("*/") {
                    Some(end) => i += 2 + end + 2,
                    None => return false,
                }
            }
            b'-' if crate::sqltext::dash_comment_at(b, i) => match sql[i..].find('\n') {
                Some(end) => i += end + 1,
                None => i = b.len(),
            },
            b'#' => match sql[i..].find('\n') {
                Some(end) => i += end + 1,
                None => i = b.len(),
            },
            b'\'' | b'"' | b'`' => {
                if first_word {
                    return false;
                }
                let Some(end) = quoted_end(b, i) else {
                    return false;
                };
                // A quoted name called as a function (`my func`(1)) is a stored function.
                let next = b[end..].iter().find(|x| !x.is_ascii_whitespace());
                if c == b'`' && next == Some(&b'(') {
                    return false;
                }
                i = end;
                prev = c;
            }
            b'@' | b';' | b'?' => return false,
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
                let word = &sql[start..i];
                if first_word {
                    if !word.eq_ignore_ascii_case("SELECT") {
                        return false;
                    }
                    first_word = false;
                } else if word.eq_ignore_ascii_case("INTO") {
                    return false;
                }
                let mut j = i;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if b.get(j) == Some(&b'(') {
                    let numeric = word.bytes().all(|d| d.is_ascii_digit());
                    let allowed = ALLOWED_BEFORE_PAREN
                        .iter()
                        .any(|a| a.eq_ignore_ascii_case(word));
                    if prev == b'.' || !(allowed || numeric) {
                        return false;
                    }
                }
                prev = b'a';
            }
            _ => {
                if first_word {
                    return false;
                }
                prev = c;
                i += 1;
            }
        }
    }
    !first_word
}

#[cfg(test)]
mod tests {
    use super::is_stateless;

    #[test]
    fn plain_selects_are_stateless() {
        for sql in [
            "SELECT c FROM sbtest1 WHERE id=5017",
            "select c from sbtest1 where id between 1 and 100",
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 100",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c",
            "  /* comment */ SELECT `a`, 'x;@y' FROM t WHERE s = 'it''s' AND d = \"q\\\"@\"",
            "SELECT COUNT(*), MAX(id) FROM t GROUP BY k HAVING COUNT(*) > 1",
            "SELECT id FROM t WHERE id IN (1, 2) AND EXISTS (SELECT 1 FROM u)",
            "SELECT WEIGHT_STRING(c) FROM t ORDER BY 1 FOR UPDATE",
        ] {
            assert!(is_stateless(sql), "{sql}");
        }
    }

    #[test]
    fn anything_that_may_touch_session_state_is_not() {
        for sql in [
            "",
            "SET @a = 1",
            // `--x` is two minus signs, not a comment (MariaDB's rule): what follows runs.
            "SELECT 1--1, GET_LOCK('l', 0) FROM t",
            "SELECT 1 --x\n, GET_LOCK('l', 0)",
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "START TRANSACTION",
            "CREATE TEMPORARY TABLE x (a int)",
            "SHOW WARNINGS",
            "SELECT @a",
            "SELECT @@session.sql_mode",
            "SELECT @a := 1",
            "SELECT 1 INTO @a",
            "SELECT c FROM t INTO OUTFILE '/tmp/x'",
            "SELECT GET_LOCK('l', 0)",
            "SELECT get_lock ('l', 0)",
            "SELECT RELEASE_ALL_LOCKS()",
            "SELECT LAST_INSERT_ID(5)",
            "SELECT FOUND_ROWS()",
            "SELECT ROW_COUNT()",
            "SELECT NEXTVAL(s)",
            "SELECT db.my_func(1)",
            "SELECT my_func(1)",
            "SELECT `my func`(1)",
            "SELECT /*!50000 GET_LOCK('l', 0) */",
            "/*!40101 SET NAMES utf8 */",
            "SELECT 1; SET @a = 1",
            "SELECT 'unterminated",
            "(SELECT 1)",
            "SELECT c FROM t WHERE id = ?",
        ] {
            assert!(!is_stateless(sql), "{sql}");
        }
    }
}

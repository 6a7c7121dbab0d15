//! Which statements leave state in their backend connection that later statements of the
//! session read, so that the session must keep that connection (session affinity, frontend
//! `session`): temporary tables, user variables assigned inside a statement, named locks, the
//! session's status counters once it reads them.

use sqlparser::tokenizer::Token;

/// What `sql` (a statement as sent to a dataNode) may leave in its connection for later
/// statements, named for logs; `None` when nothing of the kind. Read on the tokens, so words
/// inside strings and comments do not count; erring towards `Some` only costs pooling.
pub fn session_state(sql: &str) -> Option<&'static str> {
    if session_status(sql) {
        return Some("the session's status counters (SHOW STATUS)");
    }
    if !sql.contains(":=")
        && !crate::sqltext::contains_ignore_ascii_case(sql, "TEMPORARY")
        && !crate::sqltext::contains_ignore_ascii_case(sql, "GET_LOCK")
        && !crate::sqltext::contains_ignore_ascii_case(sql, "VAL")
    {
        return None;
    }
    let Some(toks) = super::rewrite::tokens(sql) else {
        // Unreadable here: assume the worst.
        return Some("a statement the gateway could not read");
    };
    let word = |i: usize, w: &str| matches!(toks.get(i), Some((Token::Word(x), _, _)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    // `CREATE [OR REPLACE] TEMPORARY TABLE`, whatever stands between CREATE and TEMPORARY
    // (`OR REPLACE`, a version comment around it, which the tokens do not show).
    if word(0, "CREATE")
        && (toks.iter().any(|(t, _, _)| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case("TEMPORARY")))
            || (sql.contains("/*") && crate::sqltext::contains_ignore_ascii_case(sql, "TEMPORARY")))
    {
        return Some("a temporary table");
    }
    for i in 0..toks.len() {
        if matches!(toks[i].0, Token::Assignment) {
            return Some("a user variable assigned in a statement");
        }
        if word(i, "GET_LOCK") && matches!(toks.get(i + 1), Some((Token::LParen, _, _))) {
            return Some("a named lock (GET_LOCK)");
        }
        // A sequence's last value in this connection (MariaDB's LASTVAL / PREVIOUS VALUE FOR).
        if ((word(i, "NEXTVAL") || word(i, "SETVAL"))
            && matches!(toks.get(i + 1), Some((Token::LParen, _, _))))
            || (word(i, "NEXT") && word(i + 1, "VALUE") && word(i + 2, "FOR"))
        {
            return Some("a sequence's last value (NEXTVAL, SETVAL)");
        }
    }
    None
}

/// `SHOW [SESSION | LOCAL] STATUS ...`: the counters of the connection it runs on, which count
/// the session's statements only while the session keeps that connection (win_i_s's
/// `Feature_window_functions` after a window function). `SHOW GLOBAL STATUS` is not the
/// session's.
fn session_status(sql: &str) -> bool {
    let mut words = sql.split_whitespace().map(str::to_ascii_uppercase);
    if words.next().as_deref() != Some("SHOW") {
        return false;
    }
    match words.next().as_deref() {
        Some("STATUS") => true,
        Some("SESSION" | "LOCAL") => words.next().as_deref() == Some("STATUS"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::session_state;

    #[test]
    fn statements_that_leave_state() {
        assert_eq!(
            session_state("CREATE TEMPORARY TABLE t (id int)"),
            Some("a temporary table")
        );
        assert!(session_state("SELECT @x := 5").is_some());
        assert!(session_state("show status like '%window%'").is_some());
        assert!(session_state("SHOW SESSION STATUS").is_some());
        assert!(session_state("SHOW GLOBAL STATUS LIKE 'x'").is_none());
        assert!(session_state("SHOW VARIABLES LIKE 'status'").is_none());
        assert!(session_state("select get_lock('a', 0)").is_some());
        assert!(session_state("SELECT nextval(s)").is_some());
        assert!(session_state("INSERT INTO t VALUES (NEXT VALUE FOR s)").is_some());
        assert!(session_state("SELECT setval(s, 5)").is_some());
        assert_eq!(session_state("SELECT lastval(s), 'nextval('"), None);
        for sql in [
            "CREATE OR REPLACE TEMPORARY TABLE t (id int)",
            "create or replace temporary table t like u",
            "CREATE /*!40101 OR REPLACE */ TEMPORARY TABLE t (id int)",
            "CREATE /*!40101 OR REPLACE TEMPORARY */ TABLE t (id int)",
            "CREATE TEMPORARY TABLE IF NOT EXISTS t AS SELECT 1 AS a",
        ] {
            assert_eq!(session_state(sql), Some("a temporary table"), "{sql}");
        }
        for sql in [
            "SELECT 'CREATE TEMPORARY TABLE', ':=', 'get_lock('",
            "SELECT * FROM travelrecord WHERE id = 1",
            "CREATE TABLE temporary_things (id int)",
        ] {
            assert_eq!(session_state(sql), None, "{sql}");
        }
    }
}

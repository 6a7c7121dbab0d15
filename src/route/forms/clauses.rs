//! More MariaDB forms `sqlparser` does not read (issue 18, the mysql-test parser gaps), each
//! dropped or replaced as the module docs of `forms` require: no name of a table, schema,
//! function, variable, file or server appears or disappears.
//!
//! - `WAIT n` / `NOWAIT` (how long to wait for a table's metadata lock) after a table's name in
//!   `DROP TABLE`, `TRUNCATE TABLE`, `RENAME TABLE t WAIT n TO ..` and after `DROP INDEX i ON t`
//!   (after the name of ALTER TABLE's table: `alter_table_options`; CREATE INDEX: `normalize`).
//! - `WAIT n` after a locking read's `FOR UPDATE` / `LOCK IN SHARE MODE` (how long to wait for
//!   the rows' locks), at the end of its SELECT; the backend receives it as written.
//! - `CREATE TABLE t WITH [RECURSIVE] cte AS (..) SELECT ..` → `CREATE TABLE t AS WITH ..`: the
//!   parser wants `AS` before a query that starts with `WITH` (MariaDB takes none).
//! - `CREATE TABLE t (SELECT ..) [UNION | EXCEPT | INTERSECT ..]` → `CREATE TABLE t AS (SELECT
//!   ..) ..`: the same query, read as the table's.
//! - `SELECT .. PROCEDURE ANALYSE([m [, n]])` (a read-only built-in that describes the result's
//!   columns; only numbers as its arguments) → the SELECT without it .
//! - ODBC escapes `{fn f(..)}`, `{d '..'}`, `{ts '..'}`, `{oj t1 LEFT JOIN t2 ON ..}` (MariaDB's
//!   `'{' ident expr '}'` and `'{' OJ table_ref .. '}'`) → `(f(..))`, `('..')`, `(t1 LEFT JOIN
//!   t2 ON ..)`: the same expression, the same tables.
//! - In CREATE / ALTER TABLE: `SIGNED UNSIGNED` / `UNSIGNED SIGNED` (a syntax error to
//!   MariaDB, which then answers it) is read as its first word.
//! - `MATCH (..) AGAINST (c)` with a column (MariaDB answers 1210: AGAINST takes a constant)
//!   → `AGAINST ('')`: the column names no table the statement does not name already (a
//!   qualified one names a table of the FROM clause or none at all).
//! - `INSERT .. SELECT <list> ON DUPLICATE KEY UPDATE ..` with no FROM in the SELECT → `..
//!   SELECT <list> FROM DUAL ON DUPLICATE ..` (what MariaDB reads a SELECT without FROM as;
//!   unquoted `DUAL` is no table to `admit`).
//! - The system-versioning words of CREATE TABLE: `[GENERATED ALWAYS] AS ROW START | END`
//!   after a column's type, the item `PERIOD FOR SYSTEM_TIME (a, b)` and `WITH[OUT] SYSTEM
//!   VERSIONING` (after a column or the table) are dropped: they name columns of the table. So
//!   are an application-time period (`PERIOD FOR p (a, b)`) and its `, p WITHOUT OVERLAPS` at
//!   the end of a key's columns; `FOR PORTION OF p FROM x TO y` after DELETE's or UPDATE's table
//!   (`x`, `y` literals only) is dropped.
//! - A backquoted engine-defined option (`` `FKEY1` = 'v1' `` after a column or the table), as
//!   `mariadb_words` drops an unquoted one; the commas CREATE TABLE may have between its table
//!   options (`(a INT) ENGINE = Aria, foo = 1`) are dropped.

use super::mariadb_words::OPTION_KEYWORDS;
use sqlparser::tokenizer::Token;

/// Words before which a word can only be a table's name in DROP / TRUNCATE / RENAME (so a
/// `WAIT` or `NOWAIT` after them is a name, never the clause).
const BEFORE_A_NAME: &[&str] = &[
    "DROP",
    "TRUNCATE",
    "RENAME",
    "TABLE",
    "TABLES",
    "TEMPORARY",
    "EXISTS",
    "INDEX",
    "KEY",
    "ON",
    "TO",
    "IF",
];

/// Words after which a quoted name and `=` are part of a clause, never an engine-defined
/// option.
const OPTION_WORDS: &[&str] = &["DEFAULT", "SET", "ON", "AS", "CHECK", "COMMENT", "TO", "BY"];

/// The token changes of this module's docs (arguments as for `mariadb_words`).
pub(super) fn clauses<'t>(
    tok: &dyn Fn(usize) -> Option<&'t Token>,
    word: &dyn Fn(usize) -> Option<String>,
    depth: &[usize],
    first: &str,
    table_ddl: bool,
    query_at: usize,
    change: &mut [Option<Vec<Token>>],
) {
    let n = depth.len();
    let is = |k: usize, w: &str| word(k).as_deref() == Some(w);
    let qualified = |k: usize| {
        matches!(tok(k + 1), Some(Token::Period))
            || k.checked_sub(1)
                .is_some_and(|j| matches!(tok(j), Some(Token::Period)))
    };
    let closes = |k: usize| {
        (k + 1..n).find(|&j| depth[j] == depth[k] && matches!(tok(j), Some(Token::RParen)))
    };
    let lock_wait_statement = match first {
        "DROP" => is(1, "TABLE") || is(1, "TABLES") || is(1, "TEMPORARY") || is(1, "INDEX"),
        "TRUNCATE" | "RENAME" => true,
        _ => false,
    };
    let mut k = 0;
    while k < n {
        // `{ident expr}`, `{oj ..}`: ODBC escapes.
        if matches!(tok(k), Some(Token::LBrace))
            && let Some(Token::Word(w)) = tok(k + 1)
            && w.quote_style.is_none()
            && !matches!(tok(k + 2), Some(Token::Period | Token::RBrace))
        {
            let mut nesting = 0usize;
            let close = (k + 1..n).find(|&j| match tok(j) {
                Some(Token::LBrace) => {
                    nesting += 1;
                    false
                }
                Some(Token::RBrace) if nesting == 0 => true,
                Some(Token::RBrace) => {
                    nesting -= 1;
                    false
                }
                _ => false,
            });
            if let Some(close) = close
                && depth[close] == depth[k]
                && !(k + 2..close)
                    .any(|j| depth[j] == depth[k] && matches!(tok(j), Some(Token::Comma)))
            {
                change[k] = Some(vec![Token::LParen]);
                change[k + 1] = Some(Vec::new());
                change[close] = Some(vec![Token::RParen]);
                k += 2;
                continue;
            }
        }
        // `CREATE TABLE t (..) a = 1, b = 2`: MariaDB takes commas between table options.
        if first == "CREATE"
            && table_ddl
            && k < query_at
            && depth[k] == 0
            && matches!(tok(k), Some(Token::Comma))
            && (0..k).any(|j| depth[j] == 0 && matches!(tok(j), Some(Token::RParen)))
            && matches!(tok(k + 1), Some(Token::Word(_)))
        {
            change[k] = Some(Vec::new());
            k += 1;
            continue;
        }
        // A backquoted engine-defined option (`` `FKEY1`='v1' ``, MariaDB's `IDENT_sys equal
        // value`), as `mariadb_words` drops an unquoted one: a quoted name is no keyword.
        if table_ddl
            && k < query_at
            && depth[k] <= 1
            && k > 0
            && match tok(k) {
                Some(Token::Word(w)) if w.quote_style == Some('`') => true,
                // An unquoted one after a comma between CREATE TABLE's options.
                Some(Token::Word(w)) => {
                    w.quote_style.is_none()
                        && depth[k] == 0
                        && matches!(tok(k - 1), Some(Token::Comma))
                        && !OPTION_KEYWORDS.contains(&w.value.to_ascii_uppercase().as_str())
                }
                _ => false,
            }
            && matches!(tok(k + 1), Some(Token::Eq))
            && matches!(
                tok(k + 2),
                Some(Token::Word(_) | Token::Number(..) | Token::SingleQuotedString(_))
            )
            && matches!(
                tok(k - 1),
                Some(
                    Token::RParen
                        | Token::Word(_)
                        | Token::Number(..)
                        | Token::SingleQuotedString(_)
                        | Token::Comma
                )
            )
            && (depth[k] == 0 || !matches!(tok(k - 1), Some(Token::Comma)))
            && word(k - 1).is_none_or(|p| !OPTION_WORDS.contains(&p.as_str()))
            && (matches!(
                tok(k + 3),
                None | Some(Token::Comma | Token::RParen | Token::SemiColon)
            ) || matches!(tok(k + 3), Some(Token::Word(_))))
        {
            for c in &mut change[k..=k + 2] {
                *c = Some(Vec::new());
            }
            k += 3;
            continue;
        }
        let Some(w) = word(k) else {
            k += 1;
            continue;
        };
        if qualified(k) {
            k += 1;
            continue;
        }
        match w.as_str() {
            // A locking read's lock wait: `FOR UPDATE WAIT n`, `LOCK IN SHARE MODE WAIT n`
            // (`NOWAIT` the parser reads), at the end of its SELECT.
            "WAIT"
                if k >= 2
                    && ((is(k - 1, "UPDATE") && is(k - 2, "FOR"))
                        || (k >= 4
                            && is(k - 1, "MODE")
                            && is(k - 2, "SHARE")
                            && is(k - 3, "IN")
                            && is(k - 4, "LOCK")))
                    && depth[k - 1] == depth[k]
                    && matches!(tok(k + 1), Some(Token::Number(..)))
                    && matches!(tok(k + 2), None | Some(Token::SemiColon | Token::RParen)) =>
            {
                change[k] = Some(Vec::new());
                change[k + 1] = Some(Vec::new());
                k += 2;
                continue;
            }
            // `WAIT n` / `NOWAIT` after a table's name (not after a comma: a name there).
            "WAIT" | "NOWAIT"
                if lock_wait_statement
                    && depth[k] == 0
                    && k >= 2
                    && matches!(tok(k - 1), Some(Token::Word(_)))
                    && word(k - 1).is_none_or(|p| !BEFORE_A_NAME.contains(&p.as_str())) =>
            {
                let last = if w == "NOWAIT" {
                    k
                } else if matches!(tok(k + 1), Some(Token::Number(..))) {
                    k + 1
                } else {
                    k += 1;
                    continue;
                };
                let after_ok = match tok(last + 1) {
                    None | Some(Token::SemiColon) => true,
                    _ => {
                        (first == "RENAME" && is(last + 1, "TO"))
                            || (first == "DROP"
                                && (is(last + 1, "RESTRICT") || is(last + 1, "CASCADE"))
                                && matches!(tok(last + 2), None | Some(Token::SemiColon)))
                    }
                };
                if after_ok {
                    for c in &mut change[k..=last] {
                        *c = Some(Vec::new());
                    }
                    k = last + 1;
                    continue;
                }
            }
            // `CREATE TABLE t WITH [RECURSIVE] cte ..`: the query after the table.
            "WITH"
                if first == "CREATE"
                    && table_ddl
                    && depth[k] == 0
                    && k == query_at
                    && k > 0
                    && !is(k - 1, "AS")
                    && (is(k + 1, "RECURSIVE")
                        || (matches!(tok(k + 1), Some(Token::Word(_)))
                            && (is(k + 2, "AS") || matches!(tok(k + 2), Some(Token::LParen))))) =>
            {
                change[k] = Some(vec![Token::make_keyword("AS"), Token::make_keyword("WITH")]);
            }
            // `CREATE TABLE t (SELECT ..) ..`: a parenthesized query right after the table's
            // name (MariaDB reads it as the table's query; the parser wants `AS` before it).
            "SELECT"
                if first == "CREATE"
                    && table_ddl
                    && k == query_at
                    && k >= 3
                    && depth[k] == 1
                    && matches!(tok(k - 1), Some(Token::LParen))
                    && matches!(tok(k - 2), Some(Token::Word(_)))
                    && (is(k - 3, "TABLE")
                        || (is(k - 3, "EXISTS") && k >= 6 && is(k - 6, "TABLE"))
                        || (matches!(tok(k - 3), Some(Token::Period))
                            && k >= 5
                            && matches!(tok(k - 4), Some(Token::Word(_)))
                            && (is(k - 5, "TABLE")
                                || (is(k - 5, "EXISTS") && k >= 8 && is(k - 8, "TABLE"))))) =>
            {
                change[k - 1] = Some(vec![Token::make_keyword("AS"), Token::LParen]);
            }
            // `PROCEDURE ANALYSE([m [, n]])` after a SELECT.
            "PROCEDURE"
                if k > 0
                    && is(k + 1, "ANALYSE")
                    && matches!(tok(k + 2), Some(Token::LParen))
                    && (0..k).any(|j| is(j, "SELECT")) =>
            {
                if let Some(close) = closes(k + 2)
                    && (k + 3..close)
                        .all(|j| matches!(tok(j), Some(Token::Number(..) | Token::Comma)))
                {
                    for c in &mut change[k..=close] {
                        *c = Some(Vec::new());
                    }
                    k = close + 1;
                    continue;
                }
            }
            // `INT SIGNED UNSIGNED`: a syntax error MariaDB answers itself.
            "UNSIGNED" | "SIGNED"
                if table_ddl
                    && k < query_at
                    && k > 0
                    && (is(k - 1, "SIGNED") || is(k - 1, "UNSIGNED"))
                    && !is(k - 1, &w) =>
            {
                change[k] = Some(Vec::new());
            }
            // `AGAINST (c)`, `AGAINST (t.c IN BOOLEAN MODE)`: a column where a constant belongs.
            "AGAINST" if matches!(tok(k + 1), Some(Token::LParen)) => {
                let mut j = k + 2;
                if matches!(tok(j), Some(Token::Word(_))) {
                    while matches!(tok(j + 1), Some(Token::Period))
                        && matches!(tok(j + 2), Some(Token::Word(_)))
                        && j < k + 6
                    {
                        j += 2;
                    }
                    let ends = matches!(tok(j + 1), Some(Token::RParen))
                        || is(j + 1, "IN")
                        || is(j + 1, "WITH");
                    if ends && !is(k + 2, "NULL") {
                        change[k + 2] = Some(vec![Token::SingleQuotedString(String::new())]);
                        for c in &mut change[k + 3..=j] {
                            *c = Some(Vec::new());
                        }
                        k = j + 1;
                        continue;
                    }
                }
            }
            // `INSERT .. SELECT 1 ON DUPLICATE KEY UPDATE ..`: a SELECT without FROM.
            "ON" if (first == "INSERT" || first == "REPLACE")
                && depth[k] == 0
                && is(k + 1, "DUPLICATE")
                && is(k + 2, "KEY")
                && is(k + 3, "UPDATE") =>
            {
                if let Some(select) = (0..k).rev().find(|&j| depth[j] == 0 && is(j, "SELECT")) {
                    let clause = |j: usize| {
                        depth[j] == 0
                            && [
                                "FROM",
                                "WHERE",
                                "GROUP",
                                "HAVING",
                                "ORDER",
                                "LIMIT",
                                "UNION",
                                "EXCEPT",
                                "INTERSECT",
                                "INTO",
                                "WINDOW",
                                "FOR",
                                "LOCK",
                            ]
                            .iter()
                            .any(|c| is(j, c))
                    };
                    if !(select + 1..k).any(clause) {
                        change[k] = Some(vec![
                            Token::make_keyword("FROM"),
                            Token::make_keyword("DUAL"),
                            Token::make_keyword("ON"),
                        ]);
                    }
                }
            }
            // `a TIMESTAMP(6) [GENERATED ALWAYS] AS ROW START | END`: the row's period.
            "ROW"
                if first == "CREATE"
                    && table_ddl
                    && k < query_at
                    && depth[k] == 1
                    && k >= 1
                    && is(k - 1, "AS")
                    && (is(k + 1, "START") || is(k + 1, "END"))
                    && matches!(tok(k + 2), Some(Token::Comma | Token::RParen)) =>
            {
                let from = if k >= 3 && is(k - 2, "ALWAYS") && is(k - 3, "GENERATED") {
                    k - 3
                } else {
                    k - 1
                };
                for c in &mut change[from..=k + 1] {
                    *c = Some(Vec::new());
                }
            }
            // `, PERIOD FOR SYSTEM_TIME (a, b)`, `, PERIOD FOR p (a, b)` (an application-time
            // period): the item that names the period's columns.
            "PERIOD"
                if first == "CREATE"
                    && table_ddl
                    && k < query_at
                    && depth[k] == 1
                    && k >= 1
                    && matches!(tok(k - 1), Some(Token::Comma))
                    && is(k + 1, "FOR")
                    && word_or_quoted(tok(k + 2))
                    && matches!(tok(k + 3), Some(Token::LParen)) =>
            {
                if let Some(close) = closes(k + 3)
                    && (k + 4..close)
                        .all(|j| matches!(tok(j), Some(Token::Comma)) || word_or_quoted(tok(j)))
                {
                    for c in &mut change[k - 1..=close] {
                        *c = Some(Vec::new());
                    }
                    k = close + 1;
                    continue;
                }
            }
            // `DELETE FROM t FOR PORTION OF p FROM x TO y` / `UPDATE t FOR PORTION OF p FROM x
            // TO y SET ..`: the application-time period `p` of the table and two literals.
            "FOR"
                if (first == "DELETE" || first == "UPDATE")
                    && depth[k] == 0
                    && k >= 2
                    && word_or_quoted(tok(k - 1))
                    && is(k + 1, "PORTION")
                    && is(k + 2, "OF")
                    && word_or_quoted(tok(k + 3))
                    && is(k + 4, "FROM")
                    && matches!(
                        tok(k + 5),
                        Some(Token::SingleQuotedString(_) | Token::Number(..))
                    )
                    && is(k + 6, "TO")
                    && matches!(
                        tok(k + 7),
                        Some(Token::SingleQuotedString(_) | Token::Number(..))
                    ) =>
            {
                for c in &mut change[k..=k + 7] {
                    *c = Some(Vec::new());
                }
                k += 8;
                continue;
            }
            // `, p WITHOUT OVERLAPS` ending a key's columns: the application-time period `p`.
            "WITHOUT"
                if first == "CREATE"
                    && table_ddl
                    && k < query_at
                    && depth[k] == 2
                    && k >= 2
                    && is(k + 1, "OVERLAPS")
                    && matches!(tok(k + 2), Some(Token::RParen))
                    && word_or_quoted(tok(k - 1))
                    && matches!(tok(k - 2), Some(Token::Comma)) =>
            {
                for c in &mut change[k - 2..=k + 1] {
                    *c = Some(Vec::new());
                }
                k += 2;
                continue;
            }
            // `WITH[OUT] SYSTEM VERSIONING` (the table's or a column's).
            "WITH" | "WITHOUT"
                if first == "CREATE"
                    && table_ddl
                    && k < query_at
                    && depth[k] <= 1
                    && is(k + 1, "SYSTEM")
                    && is(k + 2, "VERSIONING") =>
            {
                for c in &mut change[k..=k + 2] {
                    *c = Some(Vec::new());
                }
                k += 3;
                continue;
            }
            _ => {}
        }
        k += 1;
    }
}

/// Whether `t` is a word (a name, quoted or not).
fn word_or_quoted(t: Option<&Token>) -> bool {
    matches!(t, Some(Token::Word(_)))
}

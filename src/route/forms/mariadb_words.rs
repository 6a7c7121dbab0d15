//! MariaDB words `sqlparser` does not read, in queries and in table DDL (issue 18, the
//! mysql-test parser gaps), each dropped or renamed as the module docs of `forms` require: no
//! name of a table, schema, function, variable, file or server appears or disappears.
//!
//! - `GROUP BY a DESC, b ASC` (MariaDB sorts the groups so) → `GROUP BY a, b`.
//! - `CAST(x AS INTERVAL DAY_SECOND(6))` → `CAST(x AS TIME(6))`: a cast to a type.
//! - `WEIGHT_STRING(x [AS CHAR(n)] LEVEL 1-2 DESC ..)` → `WEIGHT_STRING(x)`.
//! - The function `INTERVAL(n, n1, ..)` (a list in parentheses, no unit after it) is read as a
//!   call of the built-in `INTERVAL`, which `admit` checks as any call.
//! - `TOP` (no MariaDB keyword, SQL Server's `TOP n` to the parser) is read as a name: `(SELECT
//!   ..) top`.
//! - `CREATE [OR REPLACE] FULLTEXT | SPATIAL INDEX` → `CREATE INDEX`: the same index of the
//!   same table.
//! - In CREATE / ALTER TABLE before any query: the column attributes `COMPRESSED [= method]`
//!   and `BYTE` (`CHAR(1) BYTE`, a binary string), `[NOT] IGNORED` after a key's columns or
//!   after `[PRIMARY] KEY`, and engine-defined options (`foo = bar` after a column, a key or the
//!   table; MariaDB's `IDENT_sys = value`, never one of its option keywords) are dropped. The
//!   engines a table may have (`admit::LOCAL_ENGINES`) keep their rows in their own files;
//!   `ENGINE`, `CONNECTION` and the directories are read from the text by `admit` whatever
//!   this module drops.
//! - `ALTER TABLE t EXCHANGE PARTITION p WITH TABLE t2` (the
//!   statement's only item) → `ALTER TABLE t RENAME TO t2`: the rows of `p` and of `t2` swap, so
//!   `t2` is a table the statement changes, DDL to the access check as a rename target is
//!   (MariaDB asks ALTER, INSERT, CREATE and DROP on both tables).

use sqlparser::tokenizer::Token;

/// Interval units (MariaDB 10.11 `interval`, `interval_time_stamp`).
const INTERVAL_UNITS: &[&str] = &[
    "MICROSECOND",
    "SECOND",
    "MINUTE",
    "HOUR",
    "DAY",
    "WEEK",
    "MONTH",
    "QUARTER",
    "YEAR",
    "YEAR_MONTH",
    "DAY_HOUR",
    "DAY_MINUTE",
    "DAY_SECOND",
    "DAY_MICROSECOND",
    "HOUR_MINUTE",
    "HOUR_SECOND",
    "HOUR_MICROSECOND",
    "MINUTE_SECOND",
    "MINUTE_MICROSECOND",
    "SECOND_MICROSECOND",
];

/// Words that end a GROUP BY list at its own depth.
const AFTER_GROUP_BY: &[&str] = &[
    "WITH",
    "HAVING",
    "ORDER",
    "LIMIT",
    "WINDOW",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "FOR",
    "LOCK",
    "INTO",
    "PROCEDURE",
    "OFFSET",
    "FETCH",
    "RETURNING",
];

/// MariaDB table and column option keywords (`sql_yacc.yy` `create_table_option`,
/// `column_attribute`): never an engine-defined option, which MariaDB reads only with a name
/// that is no keyword (`IDENT_sys`).
pub(super) const OPTION_KEYWORDS: &[&str] = &[
    "ENGINE",
    "TYPE",
    "MAX_ROWS",
    "MIN_ROWS",
    "AVG_ROW_LENGTH",
    "PASSWORD",
    "COMMENT",
    "AUTO_INCREMENT",
    "PACK_KEYS",
    "STATS_AUTO_RECALC",
    "STATS_PERSISTENT",
    "STATS_SAMPLE_PAGES",
    "CHECKSUM",
    "TABLE_CHECKSUM",
    "PAGE_CHECKSUM",
    "DELAY_KEY_WRITE",
    "ROW_FORMAT",
    "UNION",
    "DEFAULT",
    "CHARACTER",
    "CHARSET",
    "COLLATE",
    "INSERT_METHOD",
    "DATA",
    "INDEX",
    "DIRECTORY",
    "TABLESPACE",
    "STORAGE",
    "CONNECTION",
    "KEY_BLOCK_SIZE",
    "TRANSACTIONAL",
    "SEQUENCE",
    "WITH",
    "SYSTEM",
    "ALGORITHM",
    "LOCK",
    "COMPRESSION",
    "ENCRYPTION",
    "PARTITION",
    "PARTITIONS",
    "SUBPARTITION",
    "SUBPARTITIONS",
    "REFERENCES",
    "CHECK",
    "AS",
    "GENERATED",
    "ON",
    "KEY",
    "CONSTRAINT",
    "NOT",
    "NULL",
    "PRIMARY",
    "UNIQUE",
    "SERIAL",
    "INVISIBLE",
    "COMPRESSED",
    "IGNORED",
    "COLUMN_FORMAT",
    "SET",
    "DROP",
    "ADD",
    "ALTER",
    "MODIFY",
    "CHANGE",
    "RENAME",
    "CONVERT",
    "FORCE",
    "ORDER",
    "SELECT",
    "VALUES",
    "LIKE",
];

/// The token changes of this module's docs, on the significant tokens (`tok`, `word` and
/// `depth` as in `normalize`; `first` the statement's first word, `table_ddl` whether it is
/// CREATE / ALTER TABLE, `query_at` where a query inside it starts). A change already made by
/// `normalize` at the same place is replaced.
pub(super) fn mariadb_words<'t>(
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
    let ends_item = |j: usize| {
        matches!(
            tok(j),
            None | Some(Token::Comma | Token::RParen | Token::SemiColon)
        )
    };
    let mut k = 0;
    while k < n {
        let Some(w) = word(k) else {
            k += 1;
            continue;
        };
        // `TOP` is no MariaDB keyword (`(SELECT ..) top`, a derived table's alias, `top.a`); the
        // parser's `TOP n` is SQL Server's. Read as the name it is, qualified or not.
        if w == "TOP" {
            change[k] = Some(vec![Token::Word(sqlparser::tokenizer::Word {
                value: word_text(tok(k)),
                quote_style: None,
                keyword: sqlparser::keywords::Keyword::NoKeyword,
            })]);
            k += 1;
            continue;
        }
        if qualified(k) {
            k += 1;
            continue;
        }
        match w.as_str() {
            // `GROUP BY a DESC, b ASC`: MariaDB sorts the groups so; the parser wants no order.
            "GROUP" if is(k + 1, "BY") => {
                let d = depth[k];
                let mut j = k + 2;
                while j < n && depth[j] >= d {
                    if depth[j] == d {
                        if word(j).is_some_and(|x| AFTER_GROUP_BY.contains(&x.as_str())) {
                            break;
                        }
                        if (is(j, "ASC") || is(j, "DESC"))
                            && (j + 1 == n
                                || depth[j + 1] < d
                                || matches!(
                                    tok(j + 1),
                                    Some(Token::Comma | Token::SemiColon | Token::RParen)
                                )
                                || word(j + 1)
                                    .is_some_and(|x| AFTER_GROUP_BY.contains(&x.as_str())))
                        {
                            change[j] = Some(Vec::new());
                        }
                    }
                    j += 1;
                }
            }
            // `CAST(x AS INTERVAL DAY_SECOND(6))`: a cast to a type, read as one to `TIME(6)`.
            "INTERVAL"
                if k > 0
                    && is(k - 1, "AS")
                    && word(k + 1).is_some_and(|u| INTERVAL_UNITS.contains(&u.as_str())) =>
            {
                change[k] = Some(Vec::new());
                change[k + 1] = Some(vec![Token::make_keyword("TIME")]);
                k += 2;
                continue;
            }
            // The function `INTERVAL(n, n1, n2, ..)` (a list, not an interval's value).
            "INTERVAL" if matches!(tok(k + 1), Some(Token::LParen)) => {
                let Some(close) = closes(k + 1) else {
                    k += 1;
                    continue;
                };
                let list = (k + 2..close)
                    .any(|j| depth[j] == depth[k] + 1 && matches!(tok(j), Some(Token::Comma)));
                let unit_after =
                    word(close + 1).is_some_and(|u| INTERVAL_UNITS.contains(&u.as_str()));
                if list && !unit_after {
                    change[k] = Some(vec![Token::Word(sqlparser::tokenizer::Word {
                        value: "INTERVAL".to_string(),
                        quote_style: None,
                        keyword: sqlparser::keywords::Keyword::NoKeyword,
                    })]);
                }
            }
            // `WEIGHT_STRING(x [AS CHAR(n)] LEVEL 1-2, 3 DESC [REVERSE])`: the weights asked for.
            "WEIGHT_STRING" if matches!(tok(k + 1), Some(Token::LParen)) => {
                let Some(close) = closes(k + 1) else {
                    k += 1;
                    continue;
                };
                let inner = depth[k] + 1;
                if !(k + 2..close).any(|j| depth[j] == inner && is(j, "LEVEL")) {
                    k += 1;
                    continue;
                }
                let Some(from) =
                    (k + 2..close).find(|&j| depth[j] == inner && (is(j, "AS") || is(j, "LEVEL")))
                else {
                    k += 1;
                    continue;
                };
                let plain = (from..close).all(|j| {
                    matches!(
                        tok(j),
                        Some(
                            Token::Number(..)
                                | Token::Comma
                                | Token::Minus
                                | Token::LParen
                                | Token::RParen
                        )
                    ) || ["AS", "CHAR", "BINARY", "LEVEL", "ASC", "DESC", "REVERSE"]
                        .iter()
                        .any(|x| is(j, x))
                });
                if plain {
                    for c in &mut change[from..close] {
                        *c = Some(Vec::new());
                    }
                }
            }
            // `CREATE [OR REPLACE] FULLTEXT | SPATIAL INDEX`: the index's kind.
            "FULLTEXT" | "SPATIAL"
                if first == "CREATE"
                    && (k == 1 || (k == 3 && is(1, "OR") && is(2, "REPLACE")))
                    && is(k + 1, "INDEX") =>
            {
                for c in &mut change[1..=k] {
                    *c = Some(Vec::new());
                }
            }
            // `CHAR(1) BYTE`: MariaDB's `BYTE` attribute (a binary string), as `BINARY` is read.
            "BYTE"
                if table_ddl
                    && k < query_at
                    && k > 0
                    && (matches!(tok(k - 1), Some(Token::RParen))
                        || is(k - 1, "CHAR")
                        || is(k - 1, "VARCHAR"))
                    && (ends_item(k + 1) || word(k + 1).is_some()) =>
            {
                change[k] = Some(Vec::new());
            }
            // `a BLOB COMPRESSED [= zlib]`: how the server stores the column.
            "COMPRESSED"
                if table_ddl
                    && k < query_at
                    && depth[k] <= 1
                    && k > 0
                    && (matches!(tok(k - 1), Some(Token::RParen))
                        || word(k - 1).is_some_and(|p| {
                            !OPTION_KEYWORDS.contains(&p.as_str()) || p == "NULL"
                        }))
                    && !is(k - 1, "TABLE") =>
            {
                let value = matches!(tok(k + 1), Some(Token::Eq))
                    && matches!(tok(k + 2), Some(Token::Word(_)));
                let after = if value { k + 3 } else { k + 1 };
                if ends_item(after) || word(after).is_some() {
                    for c in &mut change[k..after] {
                        *c = Some(Vec::new());
                    }
                    k = after;
                    continue;
                }
            }
            // `KEY (a) [NOT] IGNORED`, `a INT PRIMARY KEY IGNORED`: whether the optimizer uses
            // the key.
            "IGNORED"
                if table_ddl && k < query_at && k > 1 && depth[k] <= 1 && ends_item(k + 1) =>
            {
                let before = if is(k - 1, "NOT") { k - 1 } else { k };
                if matches!(tok(before - 1), Some(Token::RParen)) || is(before - 1, "KEY") {
                    for c in &mut change[before..=k] {
                        *c = Some(Vec::new());
                    }
                }
            }
            // `ALTER TABLE t EXCHANGE PARTITION p WITH TABLE t2`:
            // the rows of a partition and of the table `t2` swap; read as `RENAME TO t2`, an
            // item that names `t2` as a table the statement changes (DDL on both).
            "EXCHANGE"
                if first == "ALTER"
                    && table_ddl
                    && depth[k] == 0
                    && is(k + 1, "PARTITION")
                    && matches!(tok(k + 2), Some(Token::Word(_)))
                    && is(k + 3, "WITH")
                    && is(k + 4, "TABLE")
                    && matches!(tok(k + 5), Some(Token::Word(_)))
                    && !(0..n).any(|j| depth[j] == 0 && matches!(tok(j), Some(Token::Comma))) =>
            {
                let mut last = k + 5;
                if matches!(tok(last + 1), Some(Token::Period))
                    && matches!(tok(last + 2), Some(Token::Word(_)))
                {
                    last += 2;
                }
                // (`WITH | WITHOUT VALIDATION` after it is MariaDB 11's, a syntax error to
                // 10.11: left unread.)
                if last + 1 == n {
                    change[k] = Some(vec![
                        Token::make_keyword("RENAME"),
                        Token::make_keyword("TO"),
                    ]);
                    for c in &mut change[k + 1..=k + 4] {
                        *c = Some(Vec::new());
                    }
                    k = n;
                    continue;
                }
            }
            // Engine-defined options (`foo = bar` after a column or the table, MariaDB's
            // `IDENT_sys equal value`): what an engine makes of them is the engine's; the
            // engines allowed (`admit::LOCAL_ENGINES`) keep rows in their own files.
            other
                if table_ddl
                    && k < query_at
                    && depth[k] <= 1
                    && k > 0
                    && matches!(tok(k + 1), Some(Token::Eq))
                    && matches!(
                        tok(k + 2),
                        Some(Token::Word(_) | Token::Number(..) | Token::SingleQuotedString(_))
                    )
                    && !OPTION_KEYWORDS.contains(&other)
                    && (matches!(tok(k - 1), Some(Token::RParen))
                        || word(k - 1).is_some()
                        || matches!(
                            tok(k - 1),
                            Some(Token::Number(..) | Token::SingleQuotedString(_))
                        ))
                    && (ends_item(k + 3) || word(k + 3).is_some()) =>
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

/// The text of a word token as written (empty for any other token).
fn word_text(t: Option<&Token>) -> String {
    match t {
        Some(Token::Word(w)) => w.value.clone(),
        _ => String::new(),
    }
}

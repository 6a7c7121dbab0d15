//! The token changes inside CREATE / ALTER TABLE and CREATE INDEX (module docs of `forms`):
//! key prefix lengths, `ENUM` / `SET` members, and ALTER TABLE items made of table options
//! only.

use sqlparser::tokenizer::Token;

/// The words a table-option item of ALTER TABLE starts with (`ENGINE = Aria`, `CONVERT TO
/// CHARACTER SET utf8`, `PARTITION BY KEY (a) PARTITIONS 3`, ...), with the word that must
/// follow (one of them) where one must.
const ALTER_OPTIONS: &[(&str, &[&str])] = &[
    ("ENGINE", &[]),
    ("CHARACTER", &["SET"]),
    ("CHARSET", &[]),
    ("COLLATE", &[]),
    ("DEFAULT", &["CHARACTER", "CHARSET", "COLLATE"]),
    ("CONVERT", &["TO"]),
    ("COMMENT", &[]),
    ("ROW_FORMAT", &[]),
    ("FORCE", &[]),
    ("PACK_KEYS", &[]),
    ("CHECKSUM", &[]),
    ("DELAY_KEY_WRITE", &[]),
    ("MAX_ROWS", &[]),
    ("MIN_ROWS", &[]),
    ("AVG_ROW_LENGTH", &[]),
    ("KEY_BLOCK_SIZE", &[]),
    ("STATS_PERSISTENT", &[]),
    ("STATS_AUTO_RECALC", &[]),
    ("STATS_SAMPLE_PAGES", &[]),
    ("TRANSACTIONAL", &[]),
    ("PAGE_CHECKSUM", &[]),
    ("PARTITION", &["BY"]),
    ("REMOVE", &["PARTITIONING"]),
    ("DISABLE", &["KEYS"]),
    ("ENABLE", &["KEYS"]),
];

/// Key parts with a prefix length (`KEY k (a(3), b)`, `PRIMARY KEY (b(2))`, `CREATE INDEX i ON t
/// (a(10))`) lose the length: the parser reads `a(3)` as a call of a function `a` (a
/// functional key part, which MariaDB does not have), and the function check then refuses a
/// function nobody called. In a key's column list before `query_at`, `name ( number )` →
/// `name`.
pub(super) fn key_prefixes<'t>(
    tok: &dyn Fn(usize) -> Option<&'t Token>,
    word: &dyn Fn(usize) -> Option<String>,
    depth: &[usize],
    query_at: usize,
    change: &mut [Option<Vec<Token>>],
) {
    const OPENERS: &[&str] = &["KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "ON"];
    for k in 0..query_at {
        if !word(k).is_some_and(|w| OPENERS.contains(&w.as_str())) {
            continue;
        }
        // The key's column list: the next `(` after at most a name, `USING BTREE` and the
        // like (words and periods only).
        let Some(open) = (k + 1..query_at.min(k + 7))
            .take_while(|&j| matches!(tok(j), Some(Token::Word(_) | Token::Period | Token::LParen)))
            .find(|&j| matches!(tok(j), Some(Token::LParen)))
        else {
            continue;
        };
        let inner = depth[open] + 1;
        let mut j = open + 1;
        while j + 3 < query_at && depth[j] >= inner {
            if depth[j] == inner
                && matches!(tok(j), Some(Token::Word(_)))
                && matches!(tok(j + 1), Some(Token::LParen))
                && matches!(tok(j + 2), Some(Token::Number(..)))
                && matches!(tok(j + 3), Some(Token::RParen))
            {
                for c in &mut change[j + 1..=j + 3] {
                    *c = Some(Vec::new());
                }
                j += 4;
            } else {
                j += 1;
            }
        }
    }
}

/// The ALTER TABLE items `<word> PARTITION ...` that change a table's partitions (MariaDB
/// 10.11, `alter_commands`). `ANALYZE`, `CHECK`, `OPTIMIZE` and `REPAIR PARTITION` are table
/// maintenance of a partition, which the gateway does not read (module `maintenance` reads the
/// whole-table statements), and stay unread;
/// `EXCHANGE PARTITION` names another table, `DISCARD` / `IMPORT` reach files.
const PARTITION_OPERATIONS: &[&str] = &[
    "ADD",
    "DROP",
    "COALESCE",
    "REORGANIZE",
    "TRUNCATE",
    "REBUILD",
];

/// Whether the literal at significant position `k` is a member of `ENUM(..)` / `SET(..)`, where
/// MariaDB takes a hex string or a double-quoted one (`text_string`; the lexer has made a
/// double-quoted name of the latter under `ANSI_QUOTES`) and the parser wants a single-quoted
/// one. The value names nothing. (A `COMMENT` takes only a quoted string, to MariaDB too.)
pub(super) fn enum_member<'t>(
    tok: &dyn Fn(usize) -> Option<&'t Token>,
    word: &dyn Fn(usize) -> Option<String>,
    depth: &[usize],
    k: usize,
) -> bool {
    let is = |j: usize, w: &str| word(j).as_deref() == Some(w);
    // A member: back over `literal ,` pairs to the opening parenthesis of ENUM / SET.
    let mut j = k;
    while j >= 1 && matches!(tok(j - 1), Some(Token::Comma)) && j >= 2 {
        j -= 2;
        if depth[j] != depth[k] {
            return false;
        }
    }
    j >= 2 && matches!(tok(j - 1), Some(Token::LParen)) && (is(j - 2, "ENUM") || is(j - 2, "SET"))
}

/// Words that end the table options of an item, or name other tables: an item holding one is
/// left as written (and stays unread).
const NOT_OPTIONS: &[&str] = &[
    "ADD", "DROP", "CHANGE", "MODIFY", "RENAME", "ALTER", "EXCHANGE", "UNION", "SELECT", "TABLE",
    "WITH", "SEQUENCE", "ORDER",
];

/// `ALTER TABLE t <item>, <item>...`: each item made of table options only (words and values;
/// an engine and directories are checked on the text by `admit`) is read as
/// `ALGORITHM = DEFAULT`, an item the parser knows that names nothing. Items that could name a
/// table (`UNION = (...)`, `EXCHANGE PARTITION ... WITH TABLE`) are not items of options.
/// `WAIT n` / `NOWAIT` right after the table's name (how long to wait for its metadata lock)
/// is dropped.
///
/// Returns the position of the table name's last token (`None` when there is no name).
pub(super) fn alter_table_options<'t>(
    table: usize,
    tok: &dyn Fn(usize) -> Option<&'t Token>,
    word: &dyn Fn(usize) -> Option<String>,
    depth: &[usize],
    change: &mut [Option<Vec<Token>>],
) -> Option<usize> {
    let is = |k: usize, w: &str| word(k).as_deref() == Some(w);
    // The table's name: after `TABLE [IF EXISTS]`, words joined by periods.
    let mut k = if is(table + 1, "IF") && is(table + 2, "EXISTS") {
        table + 3
    } else {
        table + 1
    };
    if !matches!(tok(k), Some(Token::Word(_))) {
        return None;
    }
    while matches!(tok(k + 1), Some(Token::Period)) && matches!(tok(k + 2), Some(Token::Word(_))) {
        k += 2;
    }
    let name_end = k;
    // `ALTER TABLE t WAIT 1 ...`, `ALTER TABLE t NOWAIT ...`: after a name only this clause.
    if is(k + 1, "NOWAIT") {
        change[k + 1] = Some(Vec::new());
        k += 1;
    } else if is(k + 1, "WAIT") && matches!(tok(k + 2), Some(Token::Number(..))) {
        change[k + 1] = Some(Vec::new());
        change[k + 2] = Some(Vec::new());
        k += 2;
    }
    let mut start = k + 1;
    if start == depth.len() {
        // `ALTER [ONLINE] TABLE t` with no item (a rebuild): read as an item that names nothing
        // (after a dropped `WAIT n`, by `normalize`, which reads what is left).
        if k == name_end
            && let Some(name) = tok(name_end)
        {
            change[name_end] = Some(vec![
                name.clone(),
                Token::make_keyword("ALGORITHM"),
                Token::Eq,
                Token::make_keyword("DEFAULT"),
            ]);
        }
        return Some(name_end);
    }
    while start < depth.len() {
        let item_end = |from: usize| {
            (from..depth.len())
                .find(|&j| depth[j] == 0 && matches!(tok(j), Some(Token::Comma)))
                .unwrap_or(depth.len())
        };
        let mut end = item_end(start);
        // `ALTER c SET DEFAULT ..` / `ALTER c DROP DEFAULT`: `COLUMN` is optional to MariaDB.
        if is(start, "ALTER")
            && matches!(tok(start + 1), Some(Token::Word(_)))
            && !["COLUMN", "INDEX", "KEY", "CONSTRAINT", "CHECK"]
                .iter()
                .any(|w| is(start + 1, w))
        {
            change[start] = Some(vec![
                Token::make_keyword("ALTER"),
                Token::make_keyword("COLUMN"),
            ]);
        }
        // Partition maintenance that changes the table's partitions (`COALESCE PARTITION 2`,
        // `REORGANIZE PARTITION p0 INTO (...)`, `TRUNCATE PARTITION p0, p1`, `DROP
        // PARTITION p0`, `ADD PARTITION (...)`, `REBUILD PARTITION ALL`): partition names
        // and bounds, no table; a list of names runs over the commas.
        let partition_op =
            is(start + 1, "PARTITION") && PARTITION_OPERATIONS.iter().any(|o| is(start, o));
        if partition_op
            && is(start, "REORGANIZE")
            && let Some(into) = (start + 2..depth.len()).find(|&j| depth[j] == 0 && is(j, "INTO"))
        {
            end = item_end(into);
        } else if partition_op && !is(start, "COALESCE") && !is(start, "ADD") {
            while end + 2 <= depth.len()
                && matches!(tok(end + 1), Some(Token::Word(_)))
                && (end + 2 == depth.len() || matches!(tok(end + 2), Some(Token::Comma)))
                && word(end + 1).is_none_or(|w| !NOT_OPTIONS.contains(&w.as_str()))
            {
                end = item_end(end + 1);
            }
        }
        // `ALTER INDEX i [NOT] IGNORED`: whether the optimizer uses an index of the table.
        let index_visibility = is(start, "ALTER")
            && (is(start + 1, "INDEX") || is(start + 1, "KEY"))
            && matches!(tok(start + 2), Some(Token::Word(_)))
            && (end == start + 4 || (end == start + 5 && is(start + 3, "NOT")))
            && is(end - 1, "IGNORED");
        // `RENAME INDEX | KEY i TO j`: a new name for an index of the table.
        let index_rename = is(start, "RENAME")
            && (is(start + 1, "INDEX") || is(start + 1, "KEY"))
            && matches!(tok(start + 2), Some(Token::Word(_)))
            && is(start + 3, "TO")
            && matches!(tok(start + 4), Some(Token::Word(_)))
            && end == start + 5;
        if index_visibility || index_rename {
            change[start] = Some(vec![
                Token::make_keyword("ALGORITHM"),
                Token::Eq,
                Token::make_keyword("DEFAULT"),
            ]);
            for c in &mut change[start + 1..end] {
                *c = Some(Vec::new());
            }
            start = end + 1;
            continue;
        }
        let opens = partition_op
            || word(start).is_some_and(|w| {
                ALTER_OPTIONS.iter().any(|(o, next)| {
                    *o == w && (next.is_empty() || next.iter().any(|n| is(start + 1, n)))
                })
            });
        let checked_from = if partition_op { start + 2 } else { start };
        let only_options =
            (checked_from..end).all(|j| word(j).is_none_or(|w| !NOT_OPTIONS.contains(&w.as_str())));
        if opens && only_options && end > start {
            change[start] = Some(vec![
                Token::make_keyword("ALGORITHM"),
                Token::Eq,
                Token::make_keyword("DEFAULT"),
            ]);
            for c in &mut change[start + 1..end] {
                *c = Some(Vec::new());
            }
        }
        start = end + 1;
    }
    Some(name_end)
}

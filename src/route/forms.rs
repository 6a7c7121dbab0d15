//! MariaDB forms that `sqlparser`'s MySQL dialect does not read, handed to it as forms it does
//! read that mean the same to routing and to the security classifier (module `admit`).
//!
//! The changes are made on the tokens, never on the text: every token kept keeps its place
//! (line and column), a replacing token takes the place of the one it replaces, so the spans
//! the parse reports still point at the client's text (schema qualifiers replaced per
//! dataNode, the call spellings `admit` compares). The statement a backend receives is the
//! client's text, not this form.
//!
//! Each change drops or renames a word that names nothing — no table, schema, column,
//! function, variable, file or server — so no name the allow-list and the access checks read
//! can appear or disappear; what reaches past the tables in a dropped stretch (an engine, a
//! directory, another database's `db.t`) is read from the text by `admit` itself
//! (`check_table_options`, `check_ddl_qualifiers`). A statement none of them fits stays a parse
//! error, and is refused.
//!
//! The forms (MariaDB 10.11 grammar, `sql/sql_yacc.yy`):
//! - `LOCK IN SHARE MODE` → `FOR SHARE`.
//! - `a MOD b` (the operator: `MOD` right after an operand; `MOD` is reserved, so there it can
//!   only be the operator) → `a % b`, which has its precedence.
//! - `UPDATE t1, t2 SET ...` (multi-table UPDATE) → `UPDATE t1 CROSS JOIN t2 SET ...`: the
//!   same tables, every one of them an UPDATE target to `admit::table_refs`.
//! - `DROP [TEMPORARY] TABLES` → `DROP [TEMPORARY] TABLE`.
//! - Compound interval units (`INTERVAL '1 1' DAY_SECOND`, `EXTRACT(YEAR_MONTH FROM d)`) →
//!   their leading unit (`DAY`, `YEAR`): routing never evaluates an interval.
//! - `WEIGHT_STRING(x AS CHAR(n))` / `AS BINARY(n)` → `WEIGHT_STRING(x)`.
//! - In CREATE / ALTER TABLE column definitions: the character-type attributes `BINARY`,
//!   `ASCII`, `UNICODE` (`CHAR(10) BINARY`: a collation or character set), `NATIONAL` before a
//!   character type, `ZEROFILL` before `[UN]SIGNED` are dropped; a quoted engine name
//!   (`ENGINE = 'MyISAM'`) is read as the name. The old type names with `LONG` (a reserved
//!   word, so never a name there) are read as the types MariaDB makes of them (`sql_yacc.yy`,
//!   `field_type_lob`): `LONG VARBINARY` and `LONG BYTE` → `MEDIUMBLOB`; `LONG VARCHAR`,
//!   `LONG CHAR VARYING` and a bare `LONG` → `MEDIUMTEXT`.
//! - `NEXT VALUE FOR s` / `PREVIOUS VALUE FOR s` (MariaDB sequences) → `NEXTVAL(s)` /
//!   `LASTVAL(s)`: the same sequence, read by `admit` as a table reference either way.
//! - In CREATE / ALTER TABLE: a hex or double-quoted literal as a member of `ENUM(..)` /
//!   `SET(..)` is read as a single-quoted string; `NCHAR VARCHAR | VARYING (n)` as `VARCHAR(n)`; a key
//!   part's prefix length (`KEY k (a(3))`, which the parser reads as a call of a function `a`)
//!   is dropped, in CREATE INDEX too; `IF EXISTS` after `DROP FOREIGN KEY` / `DROP INDEX | KEY`
//!   is dropped; Aria's table options `TRANSACTIONAL` and `PAGE_CHECKSUM` (with their values) are
//!   dropped from CREATE TABLE.
//! - `ALTER ONLINE [IGNORE] TABLE`, `ALTER IGNORE TABLE` → `ALTER TABLE` (with no item at all,
//!   `ALTER TABLE t ALGORITHM = DEFAULT`); `CREATE OR REPLACE [UNIQUE] INDEX` → `CREATE
//!   [UNIQUE] INDEX` (the same index of the same table), its `[NOT] IGNORED`, `WAIT n` and
//!   `NOWAIT` after the columns dropped.
//! - ALTER TABLE items: `DROP KEY k` → `DROP INDEX k`; `ALTER c SET | DROP DEFAULT` → `ALTER
//!   COLUMN c ...`; `DISABLE KEYS`, `ENABLE KEYS`, `ALTER INDEX i [NOT] IGNORED` and the
//!   partition changes `ADD | DROP | COALESCE | REORGANIZE | TRUNCATE | REBUILD PARTITION ...`
//!   (partition names and bounds; a list of names runs over the commas) are read as
//!   `ALGORITHM = DEFAULT`, as the table options are (below). `ANALYZE`, `CHECK`, `OPTIMIZE`
//!   and `REPAIR PARTITION` are table maintenance, not forwarded (as `ANALYZE TABLE`), and stay
//!   unread.
//! - `CHAR(n, ... USING cs)` → `CHAR(n, ...)`; `MATCH a, b AGAINST (..)` (the columns without
//!   parentheses) → `MATCH (a, b) AGAINST (..)`.
//! - CREATE TABLE's partitioning clause (`PARTITION BY ...` to the end, in a statement without
//!   a query) is dropped: it names no table (MariaDB allows only built-in, deterministic
//!   functions in partitioning expressions and no subquery), and its per-partition `ENGINE`,
//!   `DATA DIRECTORY` and `INDEX DIRECTORY` are refused by `admit` from the text.

use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// Parses `stmt` (one canonical statement, module `lex`) as `Parser::parse_sql` with the MySQL
/// dialect does, after the token changes of the module docs.
///
/// Errors: the parser's, as `parse_sql` gives them (the tokenizer's included).
pub fn parse(stmt: &str) -> Result<Vec<Statement>, ParserError> {
    let tokens = Tokenizer::new(&MySqlDialect {}, stmt)
        .with_unescape(true)
        .tokenize_with_location()?;
    Parser::new(&MySqlDialect {})
        .with_tokens_with_locations(normalize(tokens))
        .parse_statements()
}

/// The character types a `BINARY` / `ASCII` / `UNICODE` attribute may follow directly.
const CHARACTER_TYPES: &[&str] = &[
    "CHAR",
    "VARCHAR",
    "CHARACTER",
    "VARYING",
    "TEXT",
    "TINYTEXT",
    "MEDIUMTEXT",
    "LONGTEXT",
    "NCHAR",
    "NVARCHAR",
    "LONG",
];

/// The token changes of the module docs, on the tokenizer's output (white space and comments
/// included; they are left as they are).
fn normalize(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    // Indices of the significant tokens, and each one's parenthesis depth.
    let sig: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut depth = Vec::with_capacity(sig.len());
    let mut d = 0usize;
    for &i in &sig {
        if matches!(tokens[i].token, Token::RParen) {
            d = d.saturating_sub(1);
        }
        depth.push(d);
        if matches!(tokens[i].token, Token::LParen) {
            d += 1;
        }
    }
    let tok = |k: usize| sig.get(k).map(|&i| &tokens[i].token);
    // The unquoted word at significant position `k`, upper-cased.
    let word = |k: usize| match tok(k) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let is = |k: usize, w: &str| word(k).as_deref() == Some(w);
    // A word beside a `.` is part of a qualified name (`db.year_month`: MariaDB reads a reserved
    // word after a period as a name), never a keyword to change.
    let qualified = |k: usize| {
        matches!(tok(k + 1), Some(Token::Period))
            || k.checked_sub(1)
                .is_some_and(|j| matches!(tok(j), Some(Token::Period)))
    };
    // What replaces each significant token (by position in `sig`): None keeps it.
    let mut change: Vec<Option<Vec<Token>>> = vec![None; sig.len()];
    let first = word(0).unwrap_or_default();
    let table_ddl = match first.as_str() {
        "CREATE" => (1..5).any(|k| is(k, "TABLE")),
        "ALTER" => (1..4).any(|k| is(k, "TABLE")),
        _ => false,
    };
    // A query inside (CREATE TABLE ... SELECT, a table value constructor; not a partition's
    // `VALUES LESS THAN` / `VALUES IN`): the column-definition changes stop before it.
    let query_at = (0..sig.len())
        .find(|&k| {
            is(k, "SELECT")
                || is(k, "WITH")
                || (is(k, "VALUES") && !is(k + 1, "LESS") && !is(k + 1, "IN"))
        })
        .unwrap_or(sig.len());
    for k in 0..sig.len() {
        if let Some(Token::HexStringLiteral(text) | Token::DoubleQuotedString(text)) = tok(k)
            && table_ddl
            && k < query_at
            && enum_member(&tok, &word, &depth, k)
        {
            change[k] = Some(vec![Token::SingleQuotedString(text.clone())]);
            continue;
        }
        let Some(w) = word(k) else { continue };
        if qualified(k) {
            continue;
        }
        match w.as_str() {
            // `ALTER ONLINE [IGNORE] TABLE`, `ALTER IGNORE TABLE`: how the server alters.
            "ONLINE" | "IGNORE"
                if first == "ALTER"
                    && (k == 1 || (k == 2 && is(1, "ONLINE")))
                    && (is(k + 1, "TABLE") || (w == "ONLINE" && is(k + 1, "IGNORE"))) =>
            {
                change[k] = Some(Vec::new());
            }
            // `CREATE OR REPLACE [UNIQUE] INDEX`: the same index on the same table.
            "OR" if first == "CREATE"
                && k == 1
                && is(2, "REPLACE")
                && (is(3, "INDEX") || (is(3, "UNIQUE") && is(4, "INDEX"))) =>
            {
                change[1] = Some(Vec::new());
                change[2] = Some(Vec::new());
            }
            // `NCHAR VARCHAR(n)`, `NCHAR VARYING(n)` (`NATIONAL VARCHAR`).
            "NCHAR" if table_ddl && k < query_at && is(k + 1, "VARCHAR") => {
                change[k] = Some(Vec::new());
            }
            "NCHAR" if table_ddl && k < query_at && is(k + 1, "VARYING") => {
                change[k] = Some(vec![Token::make_keyword("VARCHAR")]);
                change[k + 1] = Some(Vec::new());
            }
            // `DROP FOREIGN KEY IF EXISTS fk`, `DROP INDEX | KEY IF EXISTS i`: whether a missing
            // one is an error.
            "IF" if first == "ALTER"
                && table_ddl
                && depth[k] == 0
                && is(k + 1, "EXISTS")
                && k >= 2
                && ((is(k - 1, "KEY") && (is(k - 2, "FOREIGN") || is(k - 2, "DROP")))
                    || (is(k - 1, "INDEX") && is(k - 2, "DROP"))) =>
            {
                change[k] = Some(Vec::new());
                change[k + 1] = Some(Vec::new());
            }
            // `ALTER TABLE t DROP KEY k` (a synonym of `DROP INDEX k`).
            "KEY"
                if first == "ALTER" && table_ddl && depth[k] == 0 && k > 0 && is(k - 1, "DROP") =>
            {
                change[k] = Some(vec![Token::make_keyword("INDEX")]);
            }
            // Aria's table options of CREATE TABLE, with their value.
            "TRANSACTIONAL" | "PAGE_CHECKSUM"
                if first == "CREATE" && table_ddl && depth[k] == 0 && k < query_at =>
            {
                let v = if matches!(tok(k + 1), Some(Token::Eq)) {
                    k + 2
                } else {
                    k + 1
                };
                if matches!(tok(v), Some(Token::Number(..) | Token::Word(_))) {
                    for c in &mut change[k..=v] {
                        *c = Some(Vec::new());
                    }
                }
            }
            // `CHAR(n, ... USING cs)`: the character set of the result.
            "CHAR" if matches!(tok(k + 1), Some(Token::LParen)) && !(table_ddl && k < query_at) => {
                let Some(close) = (k + 2..sig.len())
                    .find(|&j| depth[j] == depth[k] && matches!(tok(j), Some(Token::RParen)))
                else {
                    continue;
                };
                if close >= k + 4
                    && is(close - 2, "USING")
                    && depth[close - 2] == depth[k] + 1
                    && word(close - 1).is_some()
                {
                    change[close - 2] = Some(Vec::new());
                    change[close - 1] = Some(Vec::new());
                }
            }
            // `MATCH a, b AGAINST (...)` (columns without parentheses) → `MATCH (a, b) ...`.
            "MATCH" if !matches!(tok(k + 1), Some(Token::LParen)) => {
                let Some(against) = (k + 1..sig.len()).find(|&j| is(j, "AGAINST")) else {
                    continue;
                };
                let names_only = against > k + 1
                    && (k + 1..against).all(|j| {
                        depth[j] == depth[k]
                            && matches!(tok(j), Some(Token::Word(_) | Token::Comma | Token::Period))
                    });
                if names_only && matches!(tok(against + 1), Some(Token::LParen)) {
                    let (first_col, last_col) = (k + 1, against - 1);
                    let mut open = vec![Token::LParen];
                    open.extend(tok(first_col).cloned());
                    if first_col == last_col {
                        open.push(Token::RParen);
                        change[first_col] = Some(open);
                    } else {
                        change[first_col] = Some(open);
                        let mut shut: Vec<Token> = tok(last_col).cloned().into_iter().collect();
                        shut.push(Token::RParen);
                        change[last_col] = Some(shut);
                    }
                }
            }
            "LOCK" if is(k + 1, "IN") && is(k + 2, "SHARE") && is(k + 3, "MODE") => {
                change[k] = Some(vec![Token::make_keyword("FOR")]);
                change[k + 1] = Some(Vec::new());
                change[k + 3] = Some(Vec::new());
            }
            "MOD" if k > 0 && operand_end(&tokens, &sig, k - 1) => {
                change[k] = Some(vec![Token::Mod]);
            }
            // Compound interval units (reserved words in MariaDB, so never names).
            "YEAR_MONTH" | "DAY_HOUR" | "DAY_MINUTE" | "DAY_SECOND" | "DAY_MICROSECOND"
            | "HOUR_MINUTE" | "HOUR_SECOND" | "HOUR_MICROSECOND" | "MINUTE_SECOND"
            | "MINUTE_MICROSECOND" | "SECOND_MICROSECOND" => {
                let leading = w.split('_').next().unwrap_or_default();
                change[k] = Some(vec![Token::make_keyword(leading)]);
            }
            // `WEIGHT_STRING(x AS CHAR(n))`: the cast to a type is dropped.
            "WEIGHT_STRING" if matches!(tok(k + 1), Some(Token::LParen)) => {
                let Some(close) = (k + 2..sig.len())
                    .find(|&j| depth[j] == depth[k] && matches!(tok(j), Some(Token::RParen)))
                else {
                    continue;
                };
                let Some(as_at) = (k + 2..close).find(|&j| depth[j] == depth[k] + 1 && is(j, "AS"))
                else {
                    continue;
                };
                let typed = match close - as_at {
                    2 => true,
                    5 => {
                        matches!(tok(as_at + 2), Some(Token::LParen))
                            && matches!(tok(as_at + 3), Some(Token::Number(..)))
                    }
                    _ => false,
                };
                if typed && (is(as_at + 1, "CHAR") || is(as_at + 1, "BINARY")) {
                    for c in &mut change[as_at..close] {
                        *c = Some(Vec::new());
                    }
                }
            }
            "TABLES" if k >= 1 && first == "DROP" && (k == 1 || (k == 2 && is(1, "TEMPORARY"))) => {
                change[k] = Some(vec![Token::make_keyword("TABLE")]);
            }
            "BINARY" | "ASCII" | "UNICODE"
                if table_ddl
                    && k < query_at
                    && k >= 2
                    && !matches!(tok(k + 1), Some(Token::LParen))
                    && (matches!(tok(k - 1), Some(Token::RParen))
                        || word(k - 1).is_some_and(|p| CHARACTER_TYPES.contains(&p.as_str()))
                        || is(k - 2, "SET")
                        || is(k - 2, "CHARSET"))
                    && (matches!(tok(k + 1), None | Some(Token::Comma | Token::RParen))
                        || word(k + 1).is_some()) =>
            {
                change[k] = Some(Vec::new());
            }
            "NATIONAL"
                if table_ddl
                    && k < query_at
                    && (is(k + 1, "CHAR") || is(k + 1, "VARCHAR") || is(k + 1, "CHARACTER")) =>
            {
                change[k] = Some(Vec::new());
            }
            // `LONG [VARBINARY | BYTE | VARCHAR | CHAR VARYING]`, MariaDB's old LOB type names.
            "LONG" if table_ddl && k < query_at => {
                let (blob, words) = if is(k + 1, "VARBINARY") || is(k + 1, "BYTE") {
                    (true, 1)
                } else if is(k + 1, "VARCHAR") {
                    (false, 1)
                } else if is(k + 1, "CHAR") && is(k + 2, "VARYING") {
                    (false, 2)
                } else {
                    (false, 0)
                };
                let name = if blob { "MEDIUMBLOB" } else { "MEDIUMTEXT" };
                change[k] = Some(vec![Token::make_keyword(name)]);
                for c in &mut change[k + 1..=k + words] {
                    *c = Some(Vec::new());
                }
            }
            "ZEROFILL"
                if table_ddl && k < query_at && (is(k + 1, "UNSIGNED") || is(k + 1, "SIGNED")) =>
            {
                change[k] = Some(Vec::new());
            }
            "ENGINE" if table_ddl => {
                let v = if matches!(tok(k + 1), Some(Token::Eq)) {
                    k + 2
                } else {
                    k + 1
                };
                if let Some(Token::SingleQuotedString(name) | Token::DoubleQuotedString(name)) =
                    tok(v)
                    && !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    change[v] = Some(vec![Token::make_word(name, None)]);
                }
            }
            "PARTITION"
                if first == "CREATE"
                    && table_ddl
                    && depth[k] == 0
                    && is(k + 1, "BY")
                    && query_at == sig.len() =>
            {
                for c in change.iter_mut().skip(k) {
                    *c = Some(Vec::new());
                }
                break;
            }
            // MariaDB's sequence expressions, as their function spellings (the same table
            // reference, read by `admit` as one): `NEXT VALUE FOR s` → `NEXTVAL(s)`,
            // `PREVIOUS VALUE FOR s` → `LASTVAL(s)`; `s` is a name, `db.s` a qualified one.
            "NEXT" | "PREVIOUS" if is(k + 1, "VALUE") && is(k + 2, "FOR") => {
                let name_word = |j: usize| matches!(tok(j), Some(Token::Word(_)));
                if !name_word(k + 3) {
                    continue;
                }
                let last = if matches!(tok(k + 4), Some(Token::Period)) && name_word(k + 5) {
                    k + 5
                } else {
                    k + 3
                };
                let function = if w == "NEXT" { "NEXTVAL" } else { "LASTVAL" };
                change[k] = Some(vec![Token::make_word(function, None), Token::LParen]);
                change[k + 1] = Some(Vec::new());
                change[k + 2] = Some(Vec::new());
                let name = tok(last).cloned().unwrap_or(Token::EOF);
                change[last] = Some(vec![name, Token::RParen]);
            }
            "UPDATE" if k == 0 => {
                // Commas between the tables, before the first SET outside parentheses.
                let mut j = 1;
                while j < sig.len() && !(depth[j] == 0 && is(j, "SET")) {
                    if depth[j] == 0 && matches!(tok(j), Some(Token::Comma)) {
                        change[j] = Some(vec![
                            Token::make_keyword("CROSS"),
                            Token::make_keyword("JOIN"),
                        ]);
                    }
                    j += 1;
                }
            }
            _ => {}
        }
    }
    let index_ddl = first == "CREATE" && (1..5).any(|k| is(k, "INDEX"));
    if table_ddl || index_ddl {
        key_prefixes(&tok, &word, &depth, query_at, &mut change);
    }
    if index_ddl {
        // After the key's columns: `[NOT] IGNORED` (whether the optimizer uses the index) and
        // `WAIT n` / `NOWAIT` (how long to wait for the table's lock).
        let after =
            (0..sig.len()).find(|&k| depth[k] == 0 && matches!(tok(k), Some(Token::LParen)));
        for k in after.map_or(sig.len(), |a| a + 1)..sig.len() {
            if depth[k] != 0 {
                continue;
            }
            if is(k, "IGNORED") || is(k, "NOWAIT") {
                change[k] = Some(Vec::new());
                if k > 0 && is(k - 1, "NOT") {
                    change[k - 1] = Some(Vec::new());
                }
            } else if is(k, "WAIT") && matches!(tok(k + 1), Some(Token::Number(..))) {
                change[k] = Some(Vec::new());
                change[k + 1] = Some(Vec::new());
            }
        }
    }
    if first == "ALTER"
        && let Some(table) = (1..=3).find(|&k| is(k, "TABLE"))
        && (1..table).all(|k| is(k, "ONLINE") || is(k, "IGNORE"))
    {
        alter_table_options(table, &tok, &word, &depth, &mut change);
    }
    if change.iter().all(Option::is_none) {
        return tokens;
    }
    let mut replaced: Vec<Option<Vec<Token>>> = vec![None; tokens.len()];
    for (k, c) in change.into_iter().enumerate() {
        replaced[sig[k]] = c;
    }
    let mut out = Vec::with_capacity(tokens.len() + 2);
    for (t, r) in tokens.into_iter().zip(replaced) {
        match r {
            None => out.push(t),
            Some(new) => out.extend(new.into_iter().map(|token| TokenWithSpan {
                token,
                span: t.span,
            })),
        }
    }
    out
}

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
fn key_prefixes<'t>(
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
/// maintenance, which the gateway does not forward (as `ANALYZE TABLE`), and stay unread;
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
fn enum_member<'t>(
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
fn alter_table_options<'t>(
    table: usize,
    tok: &dyn Fn(usize) -> Option<&'t Token>,
    word: &dyn Fn(usize) -> Option<String>,
    depth: &[usize],
    change: &mut [Option<Vec<Token>>],
) {
    let is = |k: usize, w: &str| word(k).as_deref() == Some(w);
    // The table's name: after `TABLE [IF EXISTS]`, words joined by periods.
    let mut k = if is(table + 1, "IF") && is(table + 2, "EXISTS") {
        table + 3
    } else {
        table + 1
    };
    if !matches!(tok(k), Some(Token::Word(_))) {
        return;
    }
    while matches!(tok(k + 1), Some(Token::Period)) && matches!(tok(k + 2), Some(Token::Word(_))) {
        k += 2;
    }
    let mut start = k + 1;
    if start == depth.len() {
        // `ALTER [ONLINE] TABLE t` with no item (a rebuild): read as an item that names nothing.
        if let Some(name) = tok(k) {
            change[k] = Some(vec![
                name.clone(),
                Token::make_keyword("ALGORITHM"),
                Token::Eq,
                Token::make_keyword("DEFAULT"),
            ]);
        }
        return;
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
        if index_visibility {
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
}

/// Keywords after which an operand starts (a `MOD` after them is the function, `MOD(a, b)`).
/// MariaDB reserves all of them, so none can be a column name there.
const BEFORE_OPERAND: &[&str] = &[
    "SELECT",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "XOR",
    "ON",
    "BY",
    "HAVING",
    "WHEN",
    "THEN",
    "ELSE",
    "SET",
    "VALUES",
    "IN",
    "IS",
    "LIKE",
    "RLIKE",
    "REGEXP",
    "CASE",
    "DIV",
    "MOD",
    "BETWEEN",
    "INTERVAL",
    "DISTINCT",
    "DISTINCTROW",
    "ALL",
    "ANY",
    "SOME",
    "EXISTS",
    "BINARY",
    "AS",
    "RETURN",
    "LIMIT",
    "OFFSET",
    "ESCAPE",
    "SEPARATOR",
    "USING",
    "AGAINST",
    "TO",
    "FROM",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_CALC_FOUND_ROWS",
    "SQL_NO_CACHE",
    "SQL_CACHE",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "DEFAULT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WITH",
    "RECURSIVE",
    "LEADING",
    "TRAILING",
    "BOTH",
    "FOR",
    "UPDATE",
    "DELETE",
    "INSERT",
    "REPLACE",
    "INTO",
    "IF",
    "ELSEIF",
    "WHILE",
    "UNTIL",
    "DO",
    "CHECK",
    "OVER",
    "PARTITION",
    "ROWS",
    "RANGE",
    "PRECEDING",
    "FOLLOWING",
    "ORDER",
    "GROUP",
    "JOIN",
    "KEY",
    "LOW_PRIORITY",
    "IGNORE",
    "QUICK",
    "DELAYED",
    "COLLATE",
    "CHARACTER",
    "CHARSET",
    "WINDOW",
];

/// Whether the significant token at `k` ends an operand (a value, a name, a closing
/// parenthesis), so that a `MOD` after it is the operator. A word ends one unless it is a
/// keyword an operand follows ([`BEFORE_OPERAND`]); quoted, or qualified (`t.k`), it is a
/// name.
fn operand_end(tokens: &[TokenWithSpan], sig: &[usize], k: usize) -> bool {
    match &tokens[sig[k]].token {
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::RParen
        | Token::Placeholder(_) => true,
        Token::Word(w) => {
            w.quote_style.is_some()
                || (k > 0 && matches!(tokens[sig[k - 1]].token, Token::Period))
                || !BEFORE_OPERAND
                    .iter()
                    .any(|b| w.value.eq_ignore_ascii_case(b))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use sqlparser::dialect::MySqlDialect;
    use sqlparser::parser::Parser;

    /// `client` parses as `equivalent` does (compared as the parser prints them).
    fn same(client: &str, equivalent: &str) {
        let ours = parse(client).unwrap_or_else(|e| panic!("{client}: {e}"));
        let theirs = Parser::parse_sql(&MySqlDialect {}, equivalent).unwrap();
        assert_eq!(
            ours.iter().map(ToString::to_string).collect::<Vec<_>>(),
            theirs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "{client}"
        );
        assert!(
            Parser::parse_sql(&MySqlDialect {}, client).is_err(),
            "sqlparser reads {client} itself now: the change is no longer needed"
        );
    }

    /// A key part's prefix length (`b(2)`), which the parser reads as a call of a function
    /// `b` (it reads the statement, so `same` does not apply), is dropped.
    #[test]
    fn key_prefix_lengths_are_dropped() {
        let reads_as = |client: &str, equivalent: &str| {
            let ours = parse(client).unwrap_or_else(|e| panic!("{client}: {e}"));
            let theirs = Parser::parse_sql(&MySqlDialect {}, equivalent).unwrap();
            assert_eq!(
                ours.iter().map(ToString::to_string).collect::<Vec<_>>(),
                theirs.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "{client}"
            );
        };
        reads_as(
            "CREATE TABLE t (a CHAR(4), b CHAR(10), PRIMARY KEY (a, b(2)), UNIQUE KEY u (a(3)), KEY k USING BTREE (b (1), a))",
            "CREATE TABLE t (a CHAR(4), b CHAR(10), PRIMARY KEY (a, b), UNIQUE KEY u (a), KEY k USING BTREE (b, a))",
        );
        reads_as(
            "CREATE UNIQUE INDEX i ON d.t (a(10), b)",
            "CREATE UNIQUE INDEX i ON d.t (a, b)",
        );
        reads_as(
            "ALTER TABLE t ADD INDEX (a(10)), ADD COLUMN c VARCHAR(3)",
            "ALTER TABLE t ADD INDEX (a), ADD COLUMN c VARCHAR(3)",
        );
        // Elsewhere `name(number)` is a type or a call, left as written.
        reads_as(
            "CREATE TABLE t (a VARCHAR(10), b INT DEFAULT (abs(3)), KEY k (a)) SELECT LEFT(x, 2) AS a FROM u",
            "CREATE TABLE t (a VARCHAR(10), b INT DEFAULT (abs(3)), KEY k (a)) SELECT LEFT(x, 2) AS a FROM u",
        );
    }

    #[test]
    fn a_qualified_name_is_never_changed() {
        // MariaDB reads a reserved word after a period as a name: `db.year_month` is the table
        // `year_month` (read as the table `YEAR`, a table privilege was checked on the wrong
        // table).
        for sql in [
            "SELECT * FROM d.year_month",
            "DELETE FROM d.day_hour",
            "SELECT t.day_second FROM t",
        ] {
            let parsed = parse(sql).map(|s| s[0].to_string().to_ascii_uppercase());
            if let Ok(text) = &parsed {
                assert!(
                    text.contains("YEAR_MONTH")
                        || text.contains("DAY_HOUR")
                        || text.contains("DAY_SECOND"),
                    "{sql} read as {text}"
                );
            }
        }
    }

    #[test]
    fn mariadb_forms_read_as_their_equivalents() {
        same("SELECT a MOD 3 FROM t", "SELECT a % 3 FROM t");
        same(
            "SELECT id MOD 3, value mod 2 FROM t",
            "SELECT id % 3, value % 2 FROM t",
        );
        same(
            "SELECT (a+1) mod `b`, 7 MOD ?, t.k MOD 2 FROM t",
            "SELECT (a+1) % `b`, 7 % ?, t.k % 2 FROM t",
        );
        same(
            "UPDATE t1, t2 AS x SET t1.a = x.b WHERE t1.c = x.c",
            "UPDATE t1 CROSS JOIN t2 AS x SET t1.a = x.b WHERE t1.c = x.c",
        );
        same("DROP TABLES t1, t2", "DROP TABLE t1, t2");
        same(
            "SELECT DATE_ADD(a, INTERVAL '1 1' DAY_SECOND), EXTRACT(YEAR_MONTH FROM a) FROM t",
            "SELECT DATE_ADD(a, INTERVAL '1 1' DAY), EXTRACT(YEAR FROM a) FROM t",
        );
        same(
            "SELECT WEIGHT_STRING(a AS CHAR(4)), WEIGHT_STRING(b AS BINARY) FROM t",
            "SELECT WEIGHT_STRING(a), WEIGHT_STRING(b) FROM t",
        );
        same(
            "DROP TEMPORARY TABLES IF EXISTS t1",
            "DROP TEMPORARY TABLE IF EXISTS t1",
        );
        same(
            "CREATE TABLE t (a CHAR(10) BINARY NOT NULL, b VARCHAR(5) CHARACTER SET latin1 BINARY, c TEXT ASCII, d CHAR UNICODE)",
            "CREATE TABLE t (a CHAR(10) NOT NULL, b VARCHAR(5) CHARACTER SET latin1, c TEXT, d CHAR)",
        );
        same(
            "CREATE TABLE t (a NATIONAL CHAR(3), b INT(5) ZEROFILL UNSIGNED) ENGINE = 'MyISAM'",
            "CREATE TABLE t (a CHAR(3), b INT(5) UNSIGNED) ENGINE = MyISAM",
        );
        same(
            "CREATE TABLE t (col1 INT, col2 LONG BYTE, c3 LONG VARBINARY NOT NULL, c4 LONG VARCHAR BINARY, c5 LONG CHAR VARYING)",
            "CREATE TABLE t (col1 INT, col2 MEDIUMBLOB, c3 MEDIUMBLOB NOT NULL, c4 MEDIUMTEXT, c5 MEDIUMTEXT)",
        );
        same(
            "ALTER TABLE t ADD COLUMN b LONG BYTE, MODIFY c long",
            "ALTER TABLE t ADD COLUMN b MEDIUMBLOB, MODIFY c MEDIUMTEXT",
        );
        same(
            "CREATE TABLE t (a INT) ENGINE=MyISAM PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
            "CREATE TABLE t (a INT) ENGINE=MyISAM",
        );
        same(
            "ALTER TABLE t1 ENGINE = Aria, ADD COLUMN b INT, CONVERT TO CHARACTER SET utf8 COLLATE utf8_bin",
            "ALTER TABLE t1 ALGORITHM = DEFAULT, ADD COLUMN b INT, ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE db.t1 PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
            "ALTER TABLE db.t1 ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE t1 DEFAULT CHARSET = latin1 ROW_FORMAT = DYNAMIC",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "SELECT NEXT VALUE FOR s, previous value for `db`.`s2`",
            "SELECT NEXTVAL(s), LASTVAL(`db`.`s2`)",
        );
        same(
            "CREATE TABLE t (id INT DEFAULT NEXT VALUE FOR db.s, v INT)",
            "CREATE TABLE t (id INT DEFAULT NEXTVAL(db.s), v INT)",
        );
        same(
            "ALTER ONLINE TABLE t1 MODIFY b INT DEFAULT 5, ALTER c SET DEFAULT 'X'",
            "ALTER TABLE t1 MODIFY b INT DEFAULT 5, ALTER COLUMN c SET DEFAULT 'X'",
        );
        same(
            "ALTER TABLE t1 RENAME TO t2, DISABLE KEYS",
            "ALTER TABLE t1 RENAME TO t2, ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE t1 DROP KEY s1, ADD KEY(s1(1))",
            "ALTER TABLE t1 DROP INDEX s1, ADD KEY(s1)",
        );
        same(
            "CREATE INDEX a_ignorable ON t1(a) WAIT 1 NOT IGNORED",
            "CREATE INDEX a_ignorable ON t1(a)",
        );
        same(
            "CREATE INDEX i ON t1(a) IGNORED NOWAIT",
            "CREATE INDEX i ON t1(a)",
        );
        same(
            "ALTER ONLINE TABLE t1",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "CREATE OR REPLACE UNIQUE INDEX i1 ON t1(a)",
            "CREATE UNIQUE INDEX i1 ON t1(a)",
        );
        same(
            "ALTER TABLE t1 TRUNCATE PARTITION p0, `p 1`, ADD COLUMN x INT",
            "ALTER TABLE t1 ALGORITHM = DEFAULT, ADD COLUMN x INT",
        );
        same(
            "ALTER TABLE t1 REORGANIZE PARTITION p0, p1 INTO (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "CREATE TABLE t (d SET(\"Car\", 'MC'), e NCHAR VARCHAR(10), f ENUM(\"x\"), g NCHAR VARYING(3))",
            "CREATE TABLE t (d SET('Car', 'MC'), e VARCHAR(10), f ENUM('x'), g VARCHAR(3))",
        );
        same(
            "ALTER TABLE t DROP FOREIGN KEY IF EXISTS fk, DROP KEY IF EXISTS k, DROP INDEX IF EXISTS i",
            "ALTER TABLE t DROP FOREIGN KEY fk, DROP INDEX k, DROP INDEX i",
        );
        same(
            "ALTER TABLE t1 COALESCE PARTITION 2",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE t1 ALTER INDEX a NOT IGNORED, ALTER KEY b IGNORED",
            "ALTER TABLE t1 ALGORITHM = DEFAULT, ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE t1 DROP PARTITION p0, p1",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "ALTER TABLE t1 ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))",
            "ALTER TABLE t1 ALGORITHM = DEFAULT",
        );
        same(
            "CREATE TABLE t (a INT COMMENT 'x', b ENUM('a', 0x62, X'63'), c SET(0x64)) ENGINE = Aria TRANSACTIONAL = 0 PAGE_CHECKSUM 1",
            "CREATE TABLE t (a INT COMMENT 'x', b ENUM('a', '62', '63'), c SET('64')) ENGINE = Aria",
        );
        same(
            "SELECT CHAR(77, 121 USING utf8), MATCH a, t.b AGAINST ('x'), MATCH c AGAINST ('y' IN BOOLEAN MODE) FROM t",
            "SELECT CHAR(77, 121), MATCH (a, t.b) AGAINST ('x'), MATCH (c) AGAINST ('y' IN BOOLEAN MODE) FROM t",
        );
        same(
            "SELECT id FROM p WHERE id = 1 LOCK\n IN /* é */ SHARE MODE",
            "SELECT id FROM p WHERE id = 1 FOR SHARE",
        );
    }

    /// `MOD` where MariaDB reads the function, and the words of the other forms where they
    /// mean something else, are left as written.
    #[test]
    fn other_readings_are_left_alone() {
        for sql in [
            "SELECT DISTINCT MOD(b, 3) FROM t",
            "SELECT a FROM t WHERE a = MOD(5, 2)",
            "SELECT CAST(a AS BINARY) FROM t",
            "CREATE TABLE t (a BINARY(4), b INT)",
            "UPDATE t SET a = 1, b = 2",
            "UPDATE t SET a = (SELECT 1 FROM u, v)",
            "SELECT a FROM t WHERE a IN (1) AND MOD(a, 2) = 1 OR NOT MOD(a, 3)",
            "SELECT CASE WHEN 1 THEN MOD(a, 2) ELSE MOD(a, 3) END FROM t",
            // ALTER TABLE items that could name another table are not read as options.
            "ALTER TABLE t1 UNION = (t2, t3)",
            "ALTER TABLE t1 ENGINE = MRG_MyISAM UNION = (t2)",
            "ALTER TABLE t1 EXCHANGE PARTITION p0 WITH TABLE t2",
            // Table maintenance stays unread (refused, as ANALYZE TABLE is).
            "ALTER TABLE t1 ANALYZE PARTITION p0",
            "ALTER TABLE t1 CHECK PARTITION ALL",
            // A partition list does not swallow an item that names a table.
            "ALTER TABLE t1 DROP PARTITION p0, EXCHANGE PARTITION p1 WITH TABLE t2",
        ] {
            let mine = parse(sql).map(|s| s[0].to_string());
            let plain = Parser::parse_sql(&MySqlDialect {}, sql).map(|s| s[0].to_string());
            assert_eq!(mine.ok(), plain.ok(), "{sql}");
        }
        // A query in CREATE TABLE keeps the partitioning clause (and so stays unread).
        assert!(parse("CREATE TABLE t (a INT) PARTITION BY HASH (a) SELECT a FROM u").is_err());
        // A `MOD` after a keyword that is no operand is not turned into the operator.
        assert!(parse("SELECT DISTINCT MOD 2 FROM t").is_err());
    }

    /// The spans of the tokens after a change still point at the client's text.
    #[test]
    fn spans_point_at_the_clients_text() {
        use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};
        let sql = "SELECT a MOD 2, TESTDB.t.b FROM TESTDB.t LOCK IN SHARE MODE";
        let Statement::Query(q) = parse(sql).unwrap().remove(0) else {
            panic!()
        };
        let SetExpr::Select(s) = *q.body else {
            panic!()
        };
        let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = &s.projection[1] else {
            panic!("{:?}", s.projection[1])
        };
        assert_eq!(parts[0].span.start.column, 17);
        assert_eq!(&sql[16..22], "TESTDB");
    }
}

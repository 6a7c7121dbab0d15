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
//! - `UPDATE [LOW_PRIORITY] [IGNORE]` → `UPDATE`, `DELETE [LOW_PRIORITY] [QUICK] [IGNORE]` →
//!   `DELETE [QUICK]` (the parser read `UPDATE IGNORE t` as a table `ignore` aliased `t`).
//! - `ALTER ONLINE [IGNORE] TABLE`, `ALTER IGNORE TABLE` → `ALTER TABLE` (with no item at all,
//!   `ALTER TABLE t ALGORITHM = DEFAULT`); `CREATE OR REPLACE [UNIQUE] INDEX` → `CREATE
//!   [UNIQUE] INDEX` (the same index of the same table), its `[NOT] IGNORED`, `WAIT n` and
//!   `NOWAIT` after the columns dropped.
//! - ALTER TABLE items: `DROP KEY k` → `DROP INDEX k`; `ALTER c SET | DROP DEFAULT` → `ALTER
//!   COLUMN c ...`; `DISABLE KEYS`, `ENABLE KEYS`, `ALTER INDEX i [NOT] IGNORED`, `RENAME
//!   INDEX | KEY i TO j` and the
//!   partition changes `ADD | DROP | COALESCE | REORGANIZE | TRUNCATE | REBUILD PARTITION ...`
//!   (partition names and bounds; a list of names runs over the commas) are read as
//!   `ALGORITHM = DEFAULT`, as the table options are (below). `ANALYZE`, `CHECK`, `OPTIMIZE`
//!   and `REPAIR PARTITION` are table maintenance of one partition, not read by the gateway
//!   (module `maintenance` reads `ANALYZE TABLE` and its kin), and stay unread.
//! - `CHAR(n, ... USING cs)` → `CHAR(n, ...)`; `MATCH a, b AGAINST (..)` (the columns without
//!   parentheses) → `MATCH (a, b) AGAINST (..)`.
//! - In CREATE / ALTER TABLE, `COMMENT "text"` → `COMMENT 'text'`.
//! - `CAST(x AS type CHARACTER SET cs)` → `CONVERT(x, type CHARACTER SET cs)` (the parser reads
//!   a character set only in CONVERT); `CHAR[(n)] CHARSET cs` → `CHAR[(n)] CHARACTER SET cs`.
//! - CREATE TABLE's partitioning clause (`PARTITION BY ...` to the end, in a statement without
//!   a query) is dropped: it names no table (MariaDB allows only built-in, deterministic
//!   functions in partitioning expressions and no subquery), and its per-partition `ENGINE`,
//!   `DATA DIRECTORY` and `INDEX DIRECTORY` are refused by `admit` from the text.
//! - Further MariaDB words, in queries (`GROUP BY a DESC`, `CAST(x AS INTERVAL ..)`,
//!   `WEIGHT_STRING(.. LEVEL ..)`, the function `INTERVAL(..)`) and in DDL (`CREATE FULLTEXT
//!   INDEX`, `COMPRESSED`, `BYTE`, `[NOT] IGNORED` keys, engine-defined options, `EXCHANGE
//!   PARTITION .. WITH TABLE t2` read as `RENAME TO t2`): submodule `mariadb_words`.
//! - `WAIT n` / `NOWAIT` after a table's name (ALTER, DROP, TRUNCATE, RENAME TABLE, DROP
//!   INDEX), `WAIT n` after a locking read's `FOR UPDATE` / `LOCK IN SHARE MODE`, `CREATE
//!   TABLE t WITH ..` (a query), `PROCEDURE ANALYSE(..)`, ODBC escapes (`{fn
//!   f()}`, `{d '..'}`, `{oj ..}`), `SIGNED UNSIGNED`, `MATCH .. AGAINST (column)`, `INSERT ..
//!   SELECT 1 ON DUPLICATE KEY UPDATE` and the system-versioning words of CREATE TABLE:
//!   submodule `clauses`. An ALTER TABLE whose items were all dropped is read as `ALTER TABLE t
//!   ALGORITHM = DEFAULT`.
//! - `x [NOT] REGEXP | RLIKE NULL` → `x [NOT] REGEXP | RLIKE (NULL)` (the parser reads the
//!   `NULL` as the end of `x NOT NULL` and then wants a pattern).
//! - A name that starts with digits and then `e` (`SELECT 1 AS 1Eq`), which the tokenizer
//!   splits into a number and a word, is one name (`digit_led_names`).

use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

mod clauses;
mod mariadb_words;
mod operand;
mod table_definition;
#[cfg(test)]
mod tests;

use operand::operand_end;
use table_definition::{alter_table_options, enum_member, key_prefixes};

/// How deep the parser nests (sqlparser's recursion counter: about one level per nested
/// expression, parenthesis or subquery, two per nested function call; sqlparser's default is
/// 50). MariaDB's mysql-test nests 225 parentheses (`parser_stack`) and some 600 `IF(..)`
/// calls before its own stack runs out (`execution_constants`). Deeper statements are refused
/// ([`crate::route::RouteError::too_deep`]). The parser grows its stack as it recurses
/// (sqlparser's `recursive-protection`, with the gateway's [`PARSER_RED_ZONE`]; so do its
/// derived visitors); the gateway's own walks
/// over the tree, its clones and drops run on the worker threads' stacks (16 MiB, `main.rs`),
/// which hold a tree this deep many times over (`route::depth_tests`).
pub const RECURSION_LIMIT: usize = 1500;

/// Parses `stmt` (one canonical statement, module `lex`) as `Parser::parse_sql` with the MySQL
/// dialect does, after the token changes of the module docs, nesting at most
/// [`RECURSION_LIMIT`] deep.
///
/// Errors: the parser's, as `parse_sql` gives them (the tokenizer's included).
pub fn parse(stmt: &str) -> Result<Vec<Statement>, ParserError> {
    grow_parser_stacks();
    let tokens = Tokenizer::new(&MySqlDialect {}, stmt)
        .with_unescape(true)
        .tokenize_with_location()?;
    Parser::new(&MySqlDialect {})
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(normalize(tokens))
        .parse_statements()
}

/// The stack the parser keeps free below each nesting level before it recurses, in bytes
/// (`recursive`'s red zone; its default is 128 KiB). The parser checks it once per nested
/// expression, query or table factor, but one level of a function call in an unoptimized
/// build (prefix, function, argument list, the named-argument attempt and the error it
/// formats) takes more than 128 KiB between two checks: the default let 300 nested
/// `IF(1, .., 0)` over a sharded table overflow a 16 MiB worker stack and abort the process.
const PARSER_RED_ZONE: usize = 2 * 1024 * 1024;

/// The size of each stack segment the parser allocates when less than [`PARSER_RED_ZONE`] is
/// left, in bytes (mapped lazily: only the pages a statement reaches are committed).
const PARSER_STACK_SEGMENT: usize = 32 * 1024 * 1024;

/// Sets the parser's stack growth ([`PARSER_RED_ZONE`], [`PARSER_STACK_SEGMENT`]) for the
/// process, once: `recursive`'s settings are process-wide, read at every check.
fn grow_parser_stacks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        recursive::set_minimum_stack_size(PARSER_RED_ZONE);
        recursive::set_stack_allocation_size(PARSER_STACK_SEGMENT);
    });
}

/// `1Eq` (a name that starts with digits, then `e`): the tokenizer takes the `e` for the start
/// of an exponent and gives a number and a word; MariaDB reads one name (`SELECT 1 AS 1Eq`).
/// A number of digits only followed, with nothing between, by an unquoted word that starts
/// with `e` or `E` is made one word, as the tokenizer makes `1abc`.
pub(super) fn digit_led_names(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let joins = |a: &TokenWithSpan, b: &TokenWithSpan| {
        matches!(&a.token, Token::Number(s, false) if s.bytes().all(|c| c.is_ascii_digit()))
            && matches!(&b.token, Token::Word(w) if w.quote_style.is_none()
                && w.value.starts_with(['e', 'E']))
            && a.span.end == b.span.start
    };
    if !tokens.windows(2).any(|p| joins(&p[0], &p[1])) {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(prev) = out.last_mut()
            && joins(prev, &t)
            && let (Token::Number(digits, _), Token::Word(w)) = (&prev.token, &t.token)
        {
            prev.token = Token::Word(sqlparser::tokenizer::Word {
                value: format!("{digits}{}", w.value),
                quote_style: None,
                keyword: sqlparser::keywords::Keyword::NoKeyword,
            });
            prev.span = sqlparser::tokenizer::Span::new(prev.span.start, t.span.end);
            continue;
        }
        out.push(t);
    }
    out
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
    let tokens = digit_led_names(tokens);
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
                || (is(k, "WITH") && !is(k + 1, "SYSTEM"))
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
        // `COMMENT "text"` (a column's, key's or table's): the string it is (the canonical form
        // has no double-quoted names).
        if let Some(Token::DoubleQuotedString(text)) = tok(k)
            && table_ddl
            && k < query_at
            && k >= 1
            && (is(k - 1, "COMMENT")
                || (k >= 2 && matches!(tok(k - 1), Some(Token::Eq)) && is(k - 2, "COMMENT")))
        {
            change[k] = Some(vec![Token::SingleQuotedString(text.clone())]);
            continue;
        }
        let Some(w) = word(k) else { continue };
        if qualified(k) {
            continue;
        }
        match w.as_str() {
            // `x REGEXP NULL`, `x RLIKE NULL`: the parser takes `NULL` after them for the
            // `NOT NULL` of `x NOT NULL`; `(NULL)` is the same pattern.
            "NULL" if k >= 1 && (is(k - 1, "REGEXP") || is(k - 1, "RLIKE")) => {
                change[k] = Some(vec![
                    Token::LParen,
                    Token::make_keyword("NULL"),
                    Token::RParen,
                ]);
            }
            // `ALTER ONLINE [IGNORE] TABLE`, `ALTER IGNORE TABLE`: how the server alters.
            "ONLINE" | "IGNORE"
                if first == "ALTER"
                    && (k == 1 || (k == 2 && is(1, "ONLINE")))
                    && (is(k + 1, "TABLE") || (w == "ONLINE" && is(k + 1, "IGNORE"))) =>
            {
                change[k] = Some(Vec::new());
            }
            // `UPDATE [LOW_PRIORITY] [IGNORE] t`, `DELETE [LOW_PRIORITY] [QUICK] [IGNORE]`: how
            // the server runs it. (The parser read `UPDATE IGNORE t` as a table `ignore` with an
            // alias `t`; both words are reserved, so they are never a table's name there.)
            "LOW_PRIORITY" | "IGNORE"
                if (first == "UPDATE" || first == "DELETE")
                    && (1..=k)
                        .all(|j| is(j, "LOW_PRIORITY") || is(j, "IGNORE") || is(j, "QUICK")) =>
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
            // `CHAR[(n)] CHARSET cs` (a type's character set): `CHARACTER SET cs`.
            "CHARSET"
                if k >= 1
                    && word(k + 1).is_some()
                    && (word(k - 1).is_some_and(|p| CHARACTER_TYPES.contains(&p.as_str()))
                        || (k >= 4
                            && matches!(tok(k - 1), Some(Token::RParen))
                            && matches!(tok(k - 3), Some(Token::LParen))
                            && word(k - 4)
                                .is_some_and(|p| CHARACTER_TYPES.contains(&p.as_str())))) =>
            {
                change[k] = Some(vec![
                    Token::make_keyword("CHARACTER"),
                    Token::make_keyword("SET"),
                ]);
            }
            // `CAST(x AS type CHARACTER SET cs)`, which the parser reads only in CONVERT: the
            // `CONVERT(x, type CHARACTER SET cs)` it means.
            "CAST" if matches!(tok(k + 1), Some(Token::LParen)) => {
                let Some(close) = (k + 2..sig.len())
                    .find(|&j| depth[j] == depth[k] && matches!(tok(j), Some(Token::RParen)))
                else {
                    continue;
                };
                let inside = |j: &usize| depth[*j] == depth[k] + 1;
                let Some(as_at) = (k + 2..close).filter(inside).find(|&j| is(j, "AS")) else {
                    continue;
                };
                let charset = (as_at + 1..close)
                    .filter(inside)
                    .any(|j| is(j, "CHARSET") || (is(j, "CHARACTER") && is(j + 1, "SET")));
                if charset {
                    change[k] = Some(vec![Token::make_keyword("CONVERT")]);
                    change[as_at] = Some(vec![Token::Comma]);
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
                        || ((is(k - 2, "SET") || is(k - 2, "CHARSET"))
                            && matches!(tok(k - 1), Some(Token::Word(_)))))
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
    mariadb_words::mariadb_words(
        &tok,
        &word,
        &depth,
        &first,
        table_ddl,
        query_at,
        &mut change,
    );
    clauses::clauses(
        &tok,
        &word,
        &depth,
        &first,
        table_ddl,
        query_at,
        &mut change,
    );
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
        && let Some(name_end) = alter_table_options(table, &tok, &word, &depth, &mut change)
        && name_end + 1 < sig.len()
        && change[name_end + 1..]
            .iter()
            .all(|c| c.as_ref().is_some_and(Vec::is_empty))
    {
        // Every item was dropped (`ALTER TABLE t foo = 1`, an engine-defined option): read as
        // `ALTER TABLE t ALGORITHM = DEFAULT`, an item that names nothing.
        let mut name = change[name_end]
            .take()
            .unwrap_or_else(|| tok(name_end).cloned().into_iter().collect());
        name.extend([
            Token::make_keyword("ALGORITHM"),
            Token::Eq,
            Token::make_keyword("DEFAULT"),
        ]);
        change[name_end] = Some(name);
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

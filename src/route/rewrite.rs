//! Text rewrites of a statement for one dataNode. The client's SQL is sent as written; only the
//! pieces that must change are replaced, found by the parser's and tokenizer's source spans, so
//! nothing else in the text moves (string literals keep their escapes byte for byte, which a
//! re-printed AST would not: sqlparser's MySQL dialect unescapes `\\` and does not escape it
//! again).

use std::ops::Range;

use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

/// What replaces a piece of the statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replacement {
    /// The dataNode's physical database, backquoted (for logical schema qualifiers).
    Database,
    /// Fixed text.
    Text(String),
}

/// Byte ranges of a statement to replace, per dataNode.
#[derive(Debug, Clone, Default)]
pub struct Edits(Vec<(Range<usize>, Replacement)>);

impl Edits {
    /// Schema-qualifier edits at the given source spans (1-based line/column in characters, as
    /// sqlparser reports them).
    pub fn qualifiers(sql: &str, spans: &[Span]) -> Self {
        let mut e = Edits::default();
        for s in spans {
            if let (Some(a), Some(b)) = (offset(sql, s.start), offset(sql, s.end))
                && a < b
            {
                e.0.push((a..b, Replacement::Database));
            }
        }
        e.normalize();
        e
    }

    pub fn push(&mut self, range: Range<usize>, replacement: Replacement) {
        self.0.push((range, replacement));
        self.normalize();
    }

    fn normalize(&mut self) {
        self.0.sort_by_key(|(r, _)| (r.start, r.end));
        self.0.dedup_by(|a, b| a.0 == b.0);
    }

    /// The byte ranges these edits replace.
    pub fn ranges(&self) -> Vec<Range<usize>> {
        self.0.iter().map(|(r, _)| r.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `sql` with every edit applied for a node whose database is `database`.
    pub fn apply(&self, sql: &str, database: &str) -> String {
        self.apply_in(sql, 0..sql.len(), database)
    }

    /// The text of `range` of `sql`, with the edits inside it applied.
    pub fn apply_in(&self, sql: &str, range: Range<usize>, database: &str) -> String {
        let quoted = format!("`{}`", database.replace('`', "``"));
        let mut out = String::with_capacity(range.len() + 16);
        let mut at = range.start;
        for (r, rep) in &self.0 {
            if r.start < range.start || r.end > range.end || r.start < at {
                continue;
            }
            out.push_str(&sql[at..r.start]);
            match rep {
                Replacement::Database => out.push_str(&quoted),
                Replacement::Text(t) => out.push_str(t),
            }
            at = r.end;
        }
        out.push_str(&sql[at..range.end]);
        out
    }
}

/// Byte offset of a 1-based (line, column-in-characters) location.
pub fn offset(sql: &str, loc: Location) -> Option<usize> {
    if loc.line == 0 || loc.column == 0 {
        return None;
    }
    let mut line_start = 0;
    for _ in 1..loc.line {
        line_start += sql[line_start..].find('\n')? + 1;
    }
    let line = &sql[line_start..];
    let col = (loc.column - 1) as usize;
    match line.char_indices().nth(col) {
        Some((i, _)) => Some(line_start + i),
        None if line.chars().count() == col => Some(line_start + line.len()),
        None => None,
    }
}

/// The statement's tokens with byte ranges, white space and comments dropped, each with its
/// parenthesis depth. `None` when the tokenizer fails (the parser then failed too). A name
/// that starts with digits and then `e` (`1Eq`) is one word, as the parser reads it
/// (`forms::digit_led_names`): text ranges cut from these tokens match the parse's items.
pub fn tokens(sql: &str) -> Option<Vec<(Token, Range<usize>, usize)>> {
    let toks: Vec<TokenWithSpan> = Tokenizer::new(&MySqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let toks = super::forms::digit_led_names(toks);
    let mut out = Vec::with_capacity(toks.len());
    let mut depth = 0usize;
    let mut at = Cursor::default();
    for t in toks {
        if matches!(t.token, Token::Whitespace(_)) {
            continue;
        }
        let range = at.seek(sql, t.span.start)?..at.clone().seek(sql, t.span.end)?;
        match t.token {
            Token::LParen => {
                out.push((t.token, range, depth));
                depth += 1;
            }
            Token::RParen => {
                depth = depth.saturating_sub(1);
                out.push((t.token, range, depth));
            }
            _ => out.push((t.token, range, depth)),
        }
    }
    Some(out)
}

/// The statement's tokens alone ([`tokens`] without ranges and depths), for the statements the
/// gateway reads word by word (`LOCK TABLES`, table maintenance).
///
/// Errors: 1064 when the text cannot be tokenized.
pub(super) fn token_list(sql: &str) -> Result<Vec<Token>, super::RouteError> {
    Ok(tokens(sql)
        .ok_or_else(|| super::RouteError::syntax("the statement cannot be tokenized"))?
        .into_iter()
        .map(|(t, _, _)| t)
        .collect())
}

/// `name` as a MySQL quoted identifier: `` `name` ``, a backquote inside doubled.
pub fn backquoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Converts locations that only move forward to byte offsets in one pass over the text (the
/// tokens of a long statement would otherwise cost a scan each).
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    line: u64,
    column: u64,
    byte: usize,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor {
            line: 1,
            column: 1,
            byte: 0,
        }
    }
}

impl Cursor {
    /// The byte offset of `to` in `sql`, scanning on from the last location sought (from the
    /// start again for an earlier one). `None` past the end of `sql`.
    pub(super) fn seek(&mut self, sql: &str, to: Location) -> Option<usize> {
        if (to.line, to.column) < (self.line, self.column) {
            *self = Cursor::default();
        }
        let mut chars = sql[self.byte..].chars();
        while (self.line, self.column) < (to.line, to.column) {
            let c = chars.next()?;
            self.byte += c.len_utf8();
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        Some(self.byte)
    }
}

/// Byte ranges of the `?` parameter placeholders of a statement, in order. `None` when the
/// tokenizer fails.
pub fn placeholders(sql: &str) -> Option<Vec<Range<usize>>> {
    Some(
        tokens(sql)?
            .into_iter()
            .filter(|(t, _, _)| matches!(t, Token::Placeholder(p) if p == "?"))
            .map(|(_, r, _)| r)
            .collect(),
    )
}

/// Whether a token is the keyword `k`.
pub fn is_keyword(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
}

/// Byte ranges of the rows of an `INSERT ... VALUES (..), (..)` (each from its `(` to its `)`).
pub fn insert_rows(sql: &str) -> Option<Vec<Range<usize>>> {
    let toks = tokens(sql)?;
    let start = toks.iter().position(|(t, _, d)| {
        *d == 0 && (is_keyword(t, Keyword::VALUES) || is_keyword(t, Keyword::VALUE))
    })?;
    let mut rows = Vec::new();
    let mut i = start + 1;
    loop {
        let (t, r, d) = toks.get(i)?;
        if !(matches!(t, Token::LParen) && *d == 0) {
            return None;
        }
        let close = toks[i + 1..]
            .iter()
            .position(|(t, _, d)| matches!(t, Token::RParen) && *d == 0)?
            + i
            + 1;
        rows.push(r.start..toks[close].1.end);
        match toks.get(close + 1) {
            Some((Token::Comma, _, 0)) => i = close + 2,
            _ => return Some(rows),
        }
    }
}

/// The byte range of a top-level `LIMIT n`, `LIMIT m, n` or `LIMIT n OFFSET m` clause (the last
/// one at parenthesis depth 0).
pub fn limit_clause(sql: &str) -> Option<Range<usize>> {
    let toks = tokens(sql)?;
    let at = toks
        .iter()
        .rposition(|(t, _, d)| *d == 0 && is_keyword(t, Keyword::LIMIT))?;
    let number = |i: usize| matches!(toks.get(i), Some((Token::Number(..), _, 0)));
    if !number(at + 1) {
        return None;
    }
    let end = match toks.get(at + 2) {
        Some((Token::Comma, _, 0)) if number(at + 3) => at + 3,
        Some((t, _, 0)) if is_keyword(t, Keyword::OFFSET) && number(at + 3) => at + 3,
        _ => at + 1,
    };
    Some(toks[at].1.start..toks[end].1.end)
}

/// The offset of a statement's top-level `LIMIT m, n` / `LIMIT n OFFSET m` (0 without one):
/// the rows MariaDB reads and skips before sending, which its `FOUND_ROWS()` counts.
pub fn limit_offset(sql: &str) -> u64 {
    // Asked after every result set of one dataNode: the tokens are read only when a `,` or
    // `OFFSET` follows the first `LIMIT` (a `LIMIT 1` alone has no offset).
    let bytes = sql.as_bytes();
    let Some(at) = bytes
        .windows(5)
        .position(|w| w.eq_ignore_ascii_case(b"LIMIT"))
    else {
        return 0;
    };
    let rest = &sql[at..];
    if !rest.contains(',') && !super::scan::contains_ignore_ascii_case(rest, "OFFSET") {
        return 0;
    }
    let Some(range) = limit_clause(sql) else {
        return 0;
    };
    let numbers: Vec<u64> = sql[range.clone()]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let offset_last = super::scan::contains_ignore_ascii_case(&sql[range], "OFFSET");
    match numbers.as_slice() {
        [offset, _] if !offset_last => *offset,
        [_, offset] => *offset,
        _ => 0,
    }
}

/// Byte ranges of `DATABASE()` and `SCHEMA()` calls, which must answer the logical schema, not
/// the dataNode's database.
pub fn database_calls(sql: &str) -> Vec<Range<usize>> {
    niladic_calls(sql, &["DATABASE", "SCHEMA"])
}

/// Byte ranges of the `VERSION()` calls, which must answer the version the greeting announced.
pub fn version_calls(sql: &str) -> Vec<Range<usize>> {
    niladic_calls(sql, &["VERSION"])
}

/// Where a statement reads the session's counters, which the gateway keeps itself
/// ([`super::Counters`]): byte ranges, none inside strings and comments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterRefs {
    /// `FOUND_ROWS()` calls.
    pub found_rows: Vec<Range<usize>>,
    /// `LAST_INSERT_ID()` calls without an argument and `@@identity` / `@@last_insert_id`
    /// references (also `@@session.` / `@@local.`), in text order. None at all when the
    /// statement also calls `LAST_INSERT_ID(expr)`: that setter changes the value the backend
    /// gives the later calls of the statement, as MariaDB's does, so they are left to it.
    pub last_insert_id: Vec<Range<usize>>,
    /// `ROW_COUNT()` calls.
    pub row_count: Vec<Range<usize>>,
    /// `CONNECTION_ID()` calls.
    pub connection_id: Vec<Range<usize>>,
}

impl CounterRefs {
    /// Whether the statement reads none of the counters.
    pub fn is_empty(&self) -> bool {
        self.found_rows.is_empty()
            && self.last_insert_id.is_empty()
            && self.row_count.is_empty()
            && self.connection_id.is_empty()
    }
}

/// Whether `sql` may read one of the session's counters ([`counter_refs`]): it names one of
/// them somewhere (a cheap test, true for a column named `identity` too).
pub fn mentions_counters(sql: &str) -> bool {
    [
        "found_rows",
        "last_insert_id",
        "row_count",
        "identity",
        "connection_id",
    ]
    .iter()
    .any(|n| super::scan::contains_ignore_ascii_case(sql, n))
}

/// Where `sql` reads the session's counters ([`CounterRefs`]).
pub fn counter_refs(sql: &str) -> CounterRefs {
    if !mentions_counters(sql) {
        return CounterRefs::default();
    }
    let mut last_insert_id = niladic_calls(sql, &["LAST_INSERT_ID"]);
    last_insert_id.extend(session_variable_refs(sql, "identity"));
    last_insert_id.extend(session_variable_refs(sql, "last_insert_id"));
    last_insert_id.sort_by_key(|r| r.start);
    if sets_last_insert_id(sql) {
        last_insert_id.clear();
    }
    CounterRefs {
        found_rows: niladic_calls(sql, &["FOUND_ROWS"]),
        last_insert_id,
        row_count: niladic_calls(sql, &["ROW_COUNT"]),
        connection_id: niladic_calls(sql, &["CONNECTION_ID"]),
    }
}

/// Whether `sql` calls `LAST_INSERT_ID(expr)`, with an argument (MariaDB's setter).
fn sets_last_insert_id(sql: &str) -> bool {
    let Some(toks) = tokens(sql) else {
        return false;
    };
    toks.windows(3).enumerate().any(|(i, w)| {
        matches!(&w[0].0, Token::Word(x) if x.quote_style.is_none()
            && x.value.eq_ignore_ascii_case("LAST_INSERT_ID"))
            && matches!(w[1].0, Token::LParen)
            && !matches!(w[2].0, Token::RParen)
            && !(i > 0 && matches!(toks[i - 1].0, Token::Period))
    })
}

/// `sql` with each read of the session's counters ([`counter_refs`]) replaced by the value in
/// `counters`, as a literal ([`super::Counters::literal`]); `None` when it reads none. (For
/// statements whose select labels do not matter: `SET @y = FOUND_ROWS()`.)
pub fn with_counters(sql: &str, counters: &super::Counters) -> Option<String> {
    let refs = counter_refs(sql);
    if refs.is_empty() {
        return None;
    }
    let mut all: Vec<(Range<usize>, String)> = Vec::new();
    for (ranges, value) in [
        (refs.found_rows, counters.literal(super::Counter::FoundRows)),
        (
            refs.last_insert_id,
            counters.literal(super::Counter::LastInsertId),
        ),
        (refs.row_count, counters.literal(super::Counter::RowCount)),
        (
            refs.connection_id,
            counters.literal(super::Counter::ConnectionId),
        ),
    ] {
        all.extend(ranges.into_iter().map(|r| (r, value.clone())));
    }
    all.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(sql.len() + 16);
    let mut at = 0;
    for (r, value) in all {
        out.push_str(&sql[at..r.start]);
        // A literal right before a string would join it: in parentheses there.
        if sql[r.end..].starts_with(['\'', '"']) {
            out.push_str(&format!("({value})"));
        } else {
            out.push_str(&value);
        }
        at = r.end;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

/// Byte ranges of the references to the global system variable `name` (lower case): `@@name`
/// and `@@global.name`, in any case, none inside strings and comments. (`@@session.name` is
/// left alone: MariaDB refuses it for a global-only variable such as `version`.)
pub fn global_variable_refs(sql: &str, name: &str) -> Vec<Range<usize>> {
    variable_refs(sql, name, &["@@global"])
}

/// Byte ranges of the references to the session system variable `name` (lower case):
/// `@@name`, `@@session.name` and `@@local.name`, in any case, none inside strings and
/// comments (`@@global.name` is the server's, left alone).
pub fn session_variable_refs(sql: &str, name: &str) -> Vec<Range<usize>> {
    variable_refs(sql, name, &["@@session", "@@local"])
}

/// Byte ranges of `@@name` and of `<scope>.name` for each of `scopes` (`@@global`, ...), in
/// any case, none inside strings and comments, none the head of a longer name
/// (`@@version.x` is no reference of `version`).
fn variable_refs(sql: &str, name: &str, scopes: &[&str]) -> Vec<Range<usize>> {
    if !super::scan::contains_ignore_ascii_case(sql, name) {
        return Vec::new();
    }
    let Some(toks) = tokens(sql) else {
        return Vec::new();
    };
    let word = |i: usize, w: &str| {
        matches!(toks.get(i), Some((Token::Word(x), _, _)) if x.quote_style.is_none()
            && x.value.eq_ignore_ascii_case(w))
    };
    let period = |i: usize| matches!(toks.get(i), Some((Token::Period, _, _)));
    let plain = format!("@@{name}");
    (0..toks.len())
        .filter_map(|i| {
            if word(i, &plain) {
                Some(toks[i].1.clone())
            } else if scopes.iter().any(|s| word(i, s)) && period(i + 1) && word(i + 2, name) {
                Some(toks[i].1.start..toks[i + 2].1.end)
            } else {
                None
            }
        })
        .filter(|r| !sql[r.end..].starts_with('.'))
        .collect()
}

/// The words that may follow `SELECT` before its select list (MariaDB's select options).
pub const SELECT_MODIFIERS: &[&str] = &[
    "ALL",
    "DISTINCT",
    "DISTINCTROW",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "SQL_NO_CACHE",
    "SQL_CACHE",
    "SQL_CALC_FOUND_ROWS",
];

/// The select item that holds the text at `range` of `sql` (a token's start), when it has no
/// alias and ends with that text or with neither a name nor a string (`)`, a number), so that
/// `AS` written after it names the item
/// (the label MariaDB gives an item without an alias is its text as written). An item runs
/// from `SELECT` (after its modifiers) or a `,` of the same select list to the next `,`, a
/// clause (`FROM`, `WHERE`, ...), `;`, a closing parenthesis or the end. `None` when the text
/// is not in a select list (a `WHERE`, function arguments of a FROM-clause construct, ...) or
/// its item may have an alias (it ends with a name or a string: `x AS y`, `COLLATE x`).
/// `toks` are the statement's [`tokens`]: read once by the caller for all its calls.
pub fn unaliased_select_item(
    toks: &[(Token, Range<usize>, usize)],
    range: Range<usize>,
) -> Option<Range<usize>> {
    let k = toks
        .binary_search_by_key(&range.start, |(_, r, _)| r.start)
        .ok()?;
    item_of(toks, k, range.end)
}

/// Words that, right before an item's last name or string, make it an operand rather than an
/// alias.
const WORD_OPERATORS: &[&str] = &[
    "IS", "NOT", "LIKE", "AND", "OR", "XOR", "DIV", "MOD", "REGEXP", "RLIKE", "BETWEEN", "ESCAPE",
    "THEN", "ELSE", "WHEN", "COLLATE", "BINARY", "SOUNDS", "INTERVAL",
];

/// [`unaliased_select_item`] for the token `k` of `toks`, whose text ends at `end`. A
/// subquery's item (`(SELECT database())`) is the enclosing list's item when that has no alias
/// (the label the client sees), else its own.
fn item_of(toks: &[(Token, Range<usize>, usize)], k: usize, end: usize) -> Option<Range<usize>> {
    const OUTSIDE: &[&str] = &[
        "FROM",
        "WHERE",
        "GROUP",
        "HAVING",
        "ORDER",
        "LIMIT",
        "ON",
        "USING",
        "SET",
        "VALUES",
        "INTO",
        "BY",
        "WINDOW",
        "UNION",
        "EXCEPT",
        "INTERSECT",
        "JOIN",
        "UPDATE",
        "DELETE",
        "INSERT",
        "REPLACE",
        "CALL",
        "DO",
        "OFFSET",
        "FOR",
        "LOCK",
        "PROCEDURE",
        "RETURNING",
    ];
    let word = |i: usize, set: &[&str]| {
        matches!(&toks[i].0, Token::Word(w) if w.quote_style.is_none()
            && set.iter().any(|k| w.value.eq_ignore_ascii_case(k)))
    };
    // Back to the SELECT of the list, leaving the parentheses that hold the text.
    let mut level = toks[k].2;
    let mut first = None;
    let mut j = k;
    let select = loop {
        j = j.checked_sub(1)?;
        let d = toks[j].2;
        if d > level {
            continue;
        }
        if d < level {
            level = d;
            first = None;
            continue;
        }
        if word(j, &["SELECT"]) {
            break j;
        }
        if word(j, OUTSIDE) || matches!(toks[j].0, Token::SemiColon) {
            return None;
        }
        if matches!(toks[j].0, Token::Comma) && first.is_none() {
            first = Some(j + 1);
        }
    };
    let first = first.unwrap_or_else(|| {
        let mut i = select + 1;
        while i < k && word(i, SELECT_MODIFIERS) {
            i += 1;
        }
        i
    });
    // On to the item's end.
    let mut last = k;
    for (i, (t, _, d)) in toks.iter().enumerate().skip(k + 1) {
        if *d < level
            || (*d == level && (matches!(t, Token::Comma | Token::SemiColon) || word(i, OUTSIDE)))
        {
            break;
        }
        last = i;
    }
    let item = toks[first].1.start..toks[last].1.end;
    if level > 0
        && let Some(open) = (0..select)
            .rev()
            .find(|&i| toks[i].2 < level && matches!(toks[i].0, Token::LParen))
        && let Some(outer) = item_of(toks, open, toks[open].1.end)
    {
        return Some(outer);
    }
    // A name or a string last may be an alias (`x AS y`, `x y`, `x 'y'`): left alone unless
    // it is an operand or a keyword.
    let alias_like = matches!(
        toks[last].0,
        Token::Word(_)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
    );
    // An operator or a word operator right before it (`length(version()) + id`, `t.id`,
    // `x IS NULL`, `x LIKE 'a'`, `x COLLATE c`), a literal word no alias can be, or the END
    // of a CASE in the item.
    let operand = last > first
        && (matches!(
            toks[last - 1].0,
            Token::Plus
                | Token::Minus
                | Token::Mul
                | Token::Div
                | Token::Mod
                | Token::Caret
                | Token::Ampersand
                | Token::Pipe
                | Token::StringConcat
                | Token::ShiftLeft
                | Token::ShiftRight
                | Token::Eq
                | Token::DoubleEq
                | Token::Neq
                | Token::Lt
                | Token::Gt
                | Token::LtEq
                | Token::GtEq
                | Token::Spaceship
                | Token::Period
        ) || word(last - 1, WORD_OPERATORS));
    let keyword = word(last, &["NULL", "TRUE", "FALSE", "UNKNOWN"])
        || (word(last, &["END"]) && (first..last).any(|i| word(i, &["CASE"])));
    let maybe_alias = alias_like && !operand && !keyword;
    (item.end == end || !maybe_alias).then_some(item)
}

/// Byte ranges of calls without arguments of the functions `names` (upper case) in `sql`:
/// the name unquoted and not qualified, then `(` and `)`; none inside strings and comments.
fn niladic_calls(sql: &str, names: &[&str]) -> Vec<Range<usize>> {
    if !names
        .iter()
        .any(|n| super::scan::contains_ignore_ascii_case(sql, n))
    {
        return Vec::new();
    }
    let Some(toks) = tokens(sql) else {
        return Vec::new();
    };
    (0..toks.len().saturating_sub(2))
        .filter(|&i| {
            matches!(&toks[i].0, Token::Word(w) if w.quote_style.is_none()
                && names.iter().any(|n| w.value.eq_ignore_ascii_case(n)))
                && matches!(toks[i + 1].0, Token::LParen)
                && matches!(toks[i + 2].0, Token::RParen)
                && !(i > 0 && matches!(toks[i - 1].0, Token::Period))
        })
        .map(|i| toks[i].1.start..toks[i + 2].1.end)
        .collect()
}

/// How many operator-like tokens (keywords such as `AND`, `OR`, `DIV`, and symbols such as `+`,
/// `=`) a statement has: a bound on how deep its expression trees can be, which the parser's
/// visitors walk recursively.
pub fn operator_count(sql: &str) -> usize {
    let Some(toks) = tokens(sql) else { return 0 };
    toks.iter()
        .filter(|(t, _, _)| match t {
            // Keywords (AND, OR, DIV, MOD, IS, LIKE, ...) can all chain; plain names cannot.
            Token::Word(w) => w.keyword != Keyword::NoKeyword && w.quote_style.is_none(),
            Token::Comma
            | Token::LParen
            | Token::RParen
            | Token::Period
            | Token::SemiColon
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::HexStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::Placeholder(_)
            | Token::Whitespace(_) => false,
            _ => true,
        })
        .count()
}

/// Whether `query` is a `SELECT` that names no table: no `FROM` but `FROM DUAL` (a subquery's
/// included) and no sequence function (a MariaDB sequence is a table). Tokenized, so a `FROM`
/// in a string or a comment does not count; a version comment (`/*!`), which the server reads,
/// is taken to name one.
pub fn reads_no_table(query: &str) -> bool {
    if query.contains("/*!") {
        return false;
    }
    let Some(toks) = tokens(query) else {
        return false;
    };
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    toks.first().is_some_and(|t| word(&t.0, "SELECT"))
        && !toks.iter().enumerate().any(|(i, (t, _, _))| {
            (word(t, "FROM") && !toks.get(i + 1).is_some_and(|n| word(&n.0, "DUAL")))
                || ["NEXTVAL", "LASTVAL", "SETVAL", "NEXT", "PREVIOUS", "TABLE"]
                    .iter()
                    .any(|w| word(t, w))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_that_name_no_table() {
        for q in [
            "SELECT 1",
            "select @a, 'from', `x` + 1",
            "SELECT 1 FROM DUAL",
            "SELECT 1 /* FROM t */",
        ] {
            assert!(reads_no_table(q), "{q}");
        }
        for q in [
            "SELECT n FROM t",
            "SELECT (SELECT 1 FROM t)",
            "SELECT 1 FROM `DUAL`",
            "SELECT NEXTVAL(s)",
            "SELECT NEXT VALUE FOR s",
            "SELECT 1 /*!, n FROM t */",
            "SET @a = 1",
            "SHOW WARNINGS",
        ] {
            assert!(!reads_no_table(q), "{q}");
        }
    }

    #[test]
    fn global_variable_references_are_found_in_their_spellings() {
        let sql = "SELECT @@version, @@GLOBAL.Version, @@version_comment, '@@version', @@session.version, x.version /* @@version */";
        let found: Vec<&str> = global_variable_refs(sql, "version")
            .into_iter()
            .map(|r| &sql[r])
            .collect();
        assert_eq!(found, ["@@version", "@@GLOBAL.Version"]);
        let found: Vec<&str> = global_variable_refs(sql, "version_comment")
            .into_iter()
            .map(|r| &sql[r])
            .collect();
        assert_eq!(found, ["@@version_comment"]);
    }
    use sqlparser::ast::{ObjectName, Visit, Visitor};
    use sqlparser::parser::Parser;
    use std::ops::ControlFlow;

    struct Spans(Vec<Span>);
    impl Visitor for Spans {
        type Break = ();
        fn pre_visit_relation(&mut self, r: &ObjectName) -> ControlFlow<()> {
            if r.0.len() == 2 {
                self.0.push(r.0[0].as_ident().unwrap().span);
            }
            ControlFlow::Continue(())
        }
    }

    fn rewrite(sql: &str) -> String {
        let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
        let mut s = Spans(vec![]);
        let _ = stmts.visit(&mut s);
        Edits::qualifiers(sql, &s.0).apply(sql, "db1")
    }

    #[test]
    fn qualifiers_are_replaced_in_place() {
        assert_eq!(
            rewrite("select * from TESTDB.t where a='é'"),
            "select * from `db1`.t where a='é'"
        );
        assert_eq!(
            rewrite("select 'ü', x from\n  `TESTDB`.`t`"),
            "select 'ü', x from\n  `db1`.`t`"
        );
        assert_eq!(
            rewrite("insert into TESTDB.t (id) values (1)"),
            "insert into `db1`.t (id) values (1)"
        );
    }

    #[test]
    fn insert_rows_and_limit_keep_the_text() {
        let sql = r"INSERT INTO t (id, s) VALUES (1, 'a\\b'), (2,'c,(d)'),(3, f(1, 2)) ON DUPLICATE KEY UPDATE s = 'x'";
        let rows: Vec<&str> = insert_rows(sql)
            .unwrap()
            .into_iter()
            .map(|r| &sql[r])
            .collect();
        assert_eq!(rows, [r"(1, 'a\\b')", "(2,'c,(d)')", "(3, f(1, 2))"]);
        let sql = "SELECT a FROM t WHERE x IN (SELECT y FROM u LIMIT 1) LIMIT 10, 5";
        assert_eq!(&sql[limit_clause(sql).unwrap()], "LIMIT 10, 5");
        let sql = "select a from t limit 5 offset 7 for update";
        assert_eq!(&sql[limit_clause(sql).unwrap()], "limit 5 offset 7");
        assert_eq!(limit_offset(sql), 7);
        assert_eq!(limit_offset("SELECT a FROM t LIMIT 10, 5"), 10);
        assert_eq!(limit_offset("SELECT a FROM t LIMIT 5"), 0);
        assert_eq!(limit_offset("SELECT (SELECT 1 LIMIT 3, 1) FROM t"), 0);
        let sql = "SELECT database(), DATABASE ( ) FROM t";
        let calls: Vec<&str> = database_calls(sql).into_iter().map(|r| &sql[r]).collect();
        assert_eq!(calls, ["database()", "DATABASE ( )"]);
        assert_eq!(
            operator_count("SELECT a FROM t WHERE a = 1 OR a = 2 AND b IN (1, 2)"),
            8
        );
        assert_eq!(operator_count("select 1 DIV 1 DIV 1"), 3);
    }

    /// The session's counters are found as calls and variable references, never in strings,
    /// comments or qualified names; `LAST_INSERT_ID(expr)` leaves the statement's
    /// `LAST_INSERT_ID()` reads to the backend; the literals keep a string after them apart.
    #[test]
    fn counters_are_found_and_written_as_literals() {
        let sql = "SELECT found_rows()+0, 'found_rows()', db.row_count(), ROW_COUNT(), @@identity, @@session.LAST_INSERT_ID, last_insert_id() /* found_rows() */";
        let refs = counter_refs(sql);
        let text = |v: &[Range<usize>]| v.iter().map(|r| &sql[r.clone()]).collect::<Vec<_>>();
        assert_eq!(text(&refs.found_rows), ["found_rows()"]);
        assert_eq!(text(&refs.row_count), ["ROW_COUNT()"]);
        assert_eq!(
            text(&refs.last_insert_id),
            ["@@identity", "@@session.LAST_INSERT_ID", "last_insert_id()"]
        );
        let setter = counter_refs("SELECT LAST_INSERT_ID(5), LAST_INSERT_ID(), FOUND_ROWS()");
        assert!(setter.last_insert_id.is_empty());
        assert_eq!(setter.found_rows.len(), 1);
        assert!(counter_refs("SELECT @@identity_x, identity FROM t").is_empty());
        let counters = super::super::Counters {
            found_rows: 7,
            last_insert_id: 3,
            row_count: -1,
            connection_id: 42,
        };
        assert_eq!(
            with_counters(
                "SET @y = found_rows(), @z = 5-row_count(), @w = found_rows()'x'",
                &counters
            )
            .as_deref(),
            Some("SET @y = 7, @z = 5-(-1), @w = (7)'x'")
        );
        assert_eq!(
            with_counters("SET @a := connection_id() + 3", &counters).as_deref(),
            Some("SET @a := 42 + 3")
        );
        assert_eq!(with_counters("SET @y = 1", &counters), None);
    }

    #[test]
    fn the_unaliased_select_item_of_a_call_is_the_label_mariadb_gives() {
        fn item<'a>(sql: &'a str, call: &str) -> Option<&'a str> {
            let at = sql.find(call).unwrap();
            unaliased_select_item(&tokens(sql).unwrap(), at..at + call.len()).map(|r| &sql[r])
        }
        for (sql, call, want) in [
            ("SELECT database(), 1", "database()", Some("database()")),
            (
                "SELECT DISTINCT database()",
                "database()",
                Some("database()"),
            ),
            (
                "SELECT 1, concat(database(), 'x') FROM t",
                "database()",
                Some("concat(database(), 'x')"),
            ),
            (
                "SELECT length(version()) + 1 LIMIT 1",
                "version()",
                Some("length(version()) + 1"),
            ),
            (
                "SELECT a, (SELECT database()) FROM t",
                "database()",
                Some("(SELECT database())"),
            ),
            (
                "SELECT x.* FROM (SELECT database()) AS x",
                "database()",
                Some("database()"),
            ),
            ("SELECT CAST(database() AS CHAR) c", "database()", None),
            ("SELECT database() AS d", "database()", None),
            ("SELECT database() 'd'", "database()", None),
            (
                "SELECT database() IS NULL",
                "database()",
                Some("database() IS NULL"),
            ),
            (
                "SELECT length(version()) + t.id FROM t",
                "version()",
                Some("length(version()) + t.id"),
            ),
            (
                "SELECT version() = 'x'",
                "version()",
                Some("version() = 'x'"),
            ),
            ("SELECT version() x", "version()", None),
            (
                "SELECT version() IS NULL, 1",
                "version()",
                Some("version() IS NULL"),
            ),
            (
                "SELECT database() like 'H'",
                "database()",
                Some("database() like 'H'"),
            ),
            (
                "SELECT database() IS NOT TRUE",
                "database()",
                Some("database() IS NOT TRUE"),
            ),
            (
                "SELECT CASE WHEN database() = 'x' THEN 1 ELSE version() END",
                "database()",
                Some("CASE WHEN database() = 'x' THEN 1 ELSE version() END"),
            ),
            (
                "SELECT database() COLLATE utf8mb4_bin",
                "database()",
                Some("database() COLLATE utf8mb4_bin"),
            ),
            ("SELECT NOT database() d", "database()", None),
            ("SELECT a FROM t WHERE b = database()", "database()", None),
            (
                "SELECT a FROM t WHERE b IN (SELECT database())",
                "database()",
                Some("database()"),
            ),
            ("INSERT INTO t (a) VALUES (database())", "database()", None),
        ] {
            assert_eq!(item(sql, call), want, "{sql}");
        }
    }
}

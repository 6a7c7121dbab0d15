//! Where the pieces of a SELECT stand in its text (select list, FROM, ORDER BY, LIMIT), found on the parser's tokens, and the points where extra columns and limits are written.

use super::*;

/// Words that end the select list.
pub(super) const AFTER_SELECT_LIST: &[&str] = &[
    "FROM",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "FOR",
    "LOCK",
    "INTO",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "PROCEDURE",
];

/// The byte layout of a SELECT's top-level clauses, found with the tokenizer.
pub(super) struct Layout {
    pub(super) tokens: Vec<(Token, Range<usize>, usize)>,
    /// Select list items (byte ranges, from their first to their last token).
    pub(super) items: Vec<Range<usize>>,
    /// Where extra columns are inserted (just after the last item).
    pub(super) items_end: usize,
    pub(super) group: Vec<Range<usize>>,
    /// Whether a GROUP BY item ends with `ASC` / `DESC` (MariaDB sorts the groups so; the
    /// ranges in `group` stop before the word).
    pub(super) group_sorted: bool,
    /// The whole `HAVING ...` clause.
    pub(super) having: Option<Range<usize>>,
    /// The whole `ORDER BY ...` clause and its items (without `ASC` / `DESC`).
    pub(super) order: Option<(Range<usize>, Vec<Range<usize>>)>,
    pub(super) limit: Option<Range<usize>>,
    /// Where an `ORDER BY` goes when the statement has none.
    pub(super) tail: usize,
}

/// The item `r` without a trailing `ASC` / `DESC`, and whether it had one. (Not when the word
/// is the whole item: `ORDER BY a, DESC` names a column `DESC`.)
fn without_direction(
    tokens: &[(Token, Range<usize>, usize)],
    r: Range<usize>,
) -> (Range<usize>, bool) {
    let last = (0..tokens.len()).rev().find(|&i| tokens[i].1.end == r.end);
    match last {
        Some(i)
            if i > 0
                && tokens[i - 1].1.end > r.start
                && (is_keyword(&tokens[i].0, Keyword::ASC)
                    || is_keyword(&tokens[i].0, Keyword::DESC)) =>
        {
            (r.start..tokens[i - 1].1.end, true)
        }
        _ => (r, false),
    }
}

pub(super) fn word_is(t: &Token, words: &[&str]) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none()
        && words.iter().any(|k| w.value.eq_ignore_ascii_case(k)))
}

impl Layout {
    pub(super) fn new(sql: &str) -> Option<Layout> {
        let tokens = rewrite::tokens(sql)?;
        let top: Vec<usize> = (0..tokens.len()).filter(|&i| tokens[i].2 == 0).collect();
        let at = |k: usize| &tokens[top[k]];
        let select = (0..top.len()).find(|&k| is_keyword(&at(k).0, Keyword::SELECT))?;
        let mut k = select + 1;
        while k < top.len() && word_is(&at(k).0, rewrite::SELECT_MODIFIERS) {
            k += 1;
        }
        let list_start = top[k];
        let list_end = (k..top.len())
            .find(|&j| word_is(&at(j).0, AFTER_SELECT_LIST) || matches!(at(j).0, Token::SemiColon))
            .map(|j| top[j])
            .unwrap_or(tokens.len());
        let byte = |i: usize| tokens.get(i).map(|t| t.1.start).unwrap_or(sql.len());
        let items = split(&tokens, byte(list_start)..byte(list_end));
        let items_end = items.last()?.end;
        let find = |from: usize, w1: &str, w2: &str| {
            (from..top.len().saturating_sub(1))
                .find(|&j| word_is(&at(j).0, &[w1]) && word_is(&at(j + 1).0, &[w2]))
        };
        let clause_end = |from: usize, stops: &[&str]| {
            (from..top.len())
                .find(|&j| word_is(&at(j).0, stops) || matches!(at(j).0, Token::SemiColon))
                .map(|j| top[j])
                .unwrap_or(tokens.len())
        };
        let after_list = (k..top.len())
            .find(|&j| top[j] >= list_end)
            .unwrap_or(top.len());
        let mut group_sorted = false;
        let group = match find(after_list, "GROUP", "BY") {
            Some(g) => split(
                &tokens,
                byte(top.get(g + 2).copied().unwrap_or(tokens.len()))
                    ..byte(clause_end(
                        g + 2,
                        &[
                            "HAVING",
                            "WINDOW",
                            "ORDER",
                            "LIMIT",
                            "PROCEDURE",
                            "FOR",
                            "LOCK",
                            "INTO",
                            "WITH",
                        ],
                    )),
            )
            .into_iter()
            .map(|r| {
                let (r, sorted) = without_direction(&tokens, r);
                group_sorted |= sorted;
                r
            })
            .collect(),
            None => Vec::new(),
        };
        let having = (after_list..top.len())
            .find(|&j| is_keyword(&at(j).0, Keyword::HAVING))
            .and_then(|h| {
                let end = clause_end(
                    h + 1,
                    &[
                        "WINDOW",
                        "ORDER",
                        "LIMIT",
                        "PROCEDURE",
                        "FOR",
                        "LOCK",
                        "INTO",
                    ],
                );
                Some(at(h).1.start..tokens[..end].last()?.1.end)
            });
        let order = match find(after_list, "ORDER", "BY") {
            Some(o) => {
                let end = clause_end(o + 2, &["LIMIT", "PROCEDURE", "FOR", "LOCK", "INTO"]);
                let items = split(
                    &tokens,
                    byte(top.get(o + 2).copied().unwrap_or(tokens.len()))..byte(end),
                )
                .into_iter()
                .map(|r| without_direction(&tokens, r).0)
                .collect();
                let last = tokens[..end].last()?.1.end;
                Some((tokens[top[o]].1.start..last, items))
            }
            None => None,
        };
        let limit = rewrite::limit_clause(sql);
        let tail = match &limit {
            Some(l) => l.start,
            None => {
                let stop = (after_list..top.len())
                    .find(|&j| word_is(&at(j).0, &["PROCEDURE", "FOR", "LOCK", "INTO"]));
                match stop {
                    Some(j) => at(j).1.start,
                    None => {
                        tokens
                            .iter()
                            .rev()
                            .find(|t| !matches!(t.0, Token::SemiColon))?
                            .1
                            .end
                    }
                }
            }
        };
        Some(Layout {
            group_sorted,
            tokens,
            items,
            items_end,
            group,
            having,
            order,
            limit,
            tail,
        })
    }

    /// The tokens of `range`, normalised for comparing expressions as written (identifiers
    /// unquoted and lower-cased).
    pub(super) fn normalized(&self, range: &Range<usize>) -> Vec<String> {
        self.tokens
            .iter()
            .filter(|(_, r, _)| r.start >= range.start && r.end <= range.end)
            .map(|(t, _, _)| match t {
                Token::Word(w) => w.value.to_ascii_lowercase(),
                t => t.to_string(),
            })
            .collect()
    }
}

/// Where a `LIMIT` goes in a SELECT that has none: before a top-level `FOR UPDATE` /
/// `LOCK IN SHARE MODE` / `INTO`, else at the end. `None` when the statement cannot be laid out.
pub(in crate::route) fn limit_insertion_point(sql: &str) -> Option<usize> {
    Layout::new(sql).map(|l| l.tail)
}

/// Splits the tokens within `range` at the commas of its outermost level; each piece's byte
/// range runs from its first to its last token.
pub(super) fn split(
    tokens: &[(Token, Range<usize>, usize)],
    range: Range<usize>,
) -> Vec<Range<usize>> {
    let inside: Vec<&(Token, Range<usize>, usize)> = tokens
        .iter()
        .filter(|(_, r, _)| r.start >= range.start && r.end <= range.end)
        .collect();
    let Some(first) = inside.first() else {
        return Vec::new();
    };
    let base = first.2;
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    for (t, r, d) in inside {
        if *d == base && matches!(t, Token::Comma) {
            if let Some(s) = start.take() {
                out.push(s..end);
            }
            continue;
        }
        start.get_or_insert(r.start);
        end = r.end;
    }
    if let Some(s) = start {
        out.push(s..end);
    }
    out
}

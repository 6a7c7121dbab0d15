//! Column labels: the names MySQL would give the select list's items, from the client's text.

use super::*;

/// MySQL labels an unaliased result column with its text as written (`COUNT(*)`, `Name`);
/// PostgreSQL with a folded or generic name (`count`, `name`, `?column?`). The outermost
/// SELECT's unaliased items get the MySQL label as a quoted alias, so clients that read
/// columns by name see MySQL's names. (Inner queries keep theirs: outer references to them
/// use PostgreSQL's folding.)
pub(super) fn label_columns(query: &mut Query, mysql: &str, tokens: &[TokenWithSpan]) {
    if query.with.is_some() {
        return;
    }
    let sqlparser::ast::SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let Some(items) = select_item_spans(tokens) else {
        return;
    };
    if items.len() != select.projection.len() {
        return;
    }
    for (item, span) in select.projection.iter_mut().zip(items) {
        let SelectItem::UnnamedExpr(expr) = &*item else {
            continue;
        };
        let label = match expr {
            Expr::Identifier(i) => source_text(mysql, i.span),
            Expr::CompoundIdentifier(parts) => {
                parts.last().and_then(|i| source_text(mysql, i.span))
            }
            // MySQL labels a string literal with its value.
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(t) | Value::DoubleQuotedString(t) => Some(t.clone()),
                _ => source_text(mysql, span),
            },
            _ => source_text(mysql, span),
        };
        let Some(mut label) = label else {
            continue;
        };
        if let Some(unquoted) = label.strip_prefix('`').and_then(|l| l.strip_suffix('`')) {
            label = unquoted.replace("``", "`");
        }
        let plain_column = matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        // PostgreSQL already labels a lower-case column so; it truncates names past 63 bytes
        // (NAMEDATALEN) where MySQL keeps 256 characters.
        if (plain_column && label == label.to_lowercase()) || label.len() > 63 {
            continue;
        }
        *item = SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: Ident::with_quote('"', label),
        };
    }
}

/// The source spans of the outermost select list's items, from the tokens: after the first
/// `SELECT` (and its modifiers), split at top-level commas, up to the first top-level clause
/// keyword. `None` when the statement does not start that way.
pub(super) fn select_item_spans(tokens: &[TokenWithSpan]) -> Option<Vec<Span>> {
    use sqlparser::keywords::Keyword as K;
    let mut it = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .peekable();
    match it.next() {
        Some(TokenWithSpan {
            token: Token::Word(w),
            ..
        }) if w.keyword == K::SELECT => {}
        _ => return None,
    }
    while let Some(TokenWithSpan {
        token: Token::Word(w),
        ..
    }) = it.peek()
    {
        let modifier = w.quote_style.is_none()
            && (matches!(
                w.keyword,
                K::ALL | K::DISTINCT | K::DISTINCTROW | K::HIGH_PRIORITY | K::STRAIGHT_JOIN
            ) || w.value.to_ascii_uppercase().starts_with("SQL_"));
        if !modifier {
            break;
        }
        it.next();
    }
    let mut items = Vec::new();
    let mut current: Option<Span> = None;
    let mut depth = 0i32;
    for t in it {
        if depth == 0 {
            match &t.token {
                Token::Comma => {
                    items.push(current.take()?);
                    continue;
                }
                Token::SemiColon => break,
                Token::Word(w)
                    if w.quote_style.is_none()
                        && matches!(
                            w.keyword,
                            K::FROM
                                | K::INTO
                                | K::WHERE
                                | K::GROUP
                                | K::HAVING
                                | K::ORDER
                                | K::LIMIT
                                | K::WINDOW
                                | K::FOR
                                | K::LOCK
                                | K::UNION
                                | K::EXCEPT
                                | K::INTERSECT
                        ) =>
                {
                    break;
                }
                _ => {}
            }
        }
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        current = Some(match current {
            Some(s) => Span::new(s.start, t.span.end),
            None => t.span,
        });
    }
    items.push(current?);
    Some(items)
}

/// The text of `sql` that `span` covers (1-based lines and columns of characters).
pub(super) fn source_text(sql: &str, span: Span) -> Option<String> {
    let offset = |loc: sqlparser::tokenizer::Location| -> Option<usize> {
        if loc.line == 0 || loc.column == 0 {
            return None;
        }
        let line_start = if loc.line == 1 {
            0
        } else {
            sql.match_indices('\n').nth(loc.line as usize - 2)?.0 + 1
        };
        let line = &sql[line_start..];
        let in_line = line
            .char_indices()
            .nth(loc.column as usize - 1)
            .map_or(line.len(), |(i, _)| i);
        Some(line_start + in_line)
    };
    let (start, end) = (offset(span.start)?, offset(span.end)?);
    (start < end).then(|| sql[start..end].to_string())
}

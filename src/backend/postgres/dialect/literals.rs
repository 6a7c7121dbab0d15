//! The strings and quoted names of a translated statement, made safe to print for PostgreSQL.
//!
//! sqlparser prints a string literal or a quoted name with its quotes doubled *except* a quote
//! after a backslash or one already doubled: a rule made for MySQL's backslash escapes.
//! PostgreSQL (`standard_conforming_strings = on`, fixed per connection) reads a backslash as
//! an ordinary character, so a value ending in `\'` would end the literal early and the rest of
//! the value would be read as SQL. So, last of all, every quote inside a string or a
//! double-quoted name is doubled here: sqlparser then finds each quote paired and writes the
//! text as it is, which PostgreSQL reads back exactly. A backquoted name holding `"` or `\` is
//! refused by the token pass, before statements are built from it as text (`COMMENT ON
//! COLUMN`, catalog lookups).

use super::*;

/// Doubles the quotes of every string literal and double-quoted name of `statement` (see the
/// module doc), and refuses the string forms and quotes whose printing is not known to be
/// exact. Call it once, on the finished statement, right before printing it.
///
/// Errors: [`DialectError::Unsupported`] naming the construct.
pub(super) fn make_printable(statement: &mut Statement) -> Result<(), DialectError> {
    match statement.visit(&mut Printable) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Whether a quoted name is refused by the token pass: it holds `quote` or a backslash.
pub(super) fn unsafe_name(value: &str, quote: char) -> bool {
    value.contains(quote) || value.contains('\\')
}

/// `s` with every `quote` doubled.
fn doubled(s: &str, quote: char) -> String {
    s.replace(quote, &format!("{quote}{quote}"))
}

struct Printable;

impl VisitorMut for Printable {
    type Break = DialectError;

    fn post_visit_ident(&mut self, i: &mut Ident) -> ControlFlow<DialectError> {
        match i.quote_style {
            None => {}
            Some('"') => i.value = doubled(&i.value, '"'),
            Some(q) => {
                return ControlFlow::Break(DialectError::Unsupported(format!(
                    "a name quoted with {q}"
                )));
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_value(
        &mut self,
        v: &mut sqlparser::ast::ValueWithSpan,
    ) -> ControlFlow<DialectError> {
        match &mut v.value {
            Value::SingleQuotedString(s) => *s = doubled(s, '\''),
            Value::DoubleQuotedString(s) | Value::NationalStringLiteral(s) => {
                v.value = Value::SingleQuotedString(doubled(s, '\''));
            }
            Value::HexStringLiteral(h) if !h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                return ControlFlow::Break(DialectError::Unsupported(
                    "a hexadecimal literal holding other characters".into(),
                ));
            }
            // E'..' comes only from manx's own catalog queries (parsed as PostgreSQL), and
            // sqlparser escapes it completely (`\'`, `\\`, `\n`, ..).
            Value::Number(..)
            | Value::Boolean(_)
            | Value::Null
            | Value::Placeholder(_)
            | Value::HexStringLiteral(_)
            | Value::EscapedStringLiteral(_) => {}
            other => {
                return ControlFlow::Break(DialectError::Unsupported(format!(
                    "the literal {other}"
                )));
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL reads from a standard string literal: `''` is one quote, nothing else is
    /// special; `None` when the text is not one literal.
    fn postgresql_reads(printed: &str) -> Option<String> {
        let body = printed.strip_prefix('\'')?.strip_suffix('\'')?;
        let mut out = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' && chars.next() != Some('\'') {
                return None;
            }
            out.push(c);
        }
        Some(out)
    }

    #[test]
    fn printed_strings_read_back_exactly() {
        for value in [
            "x\\'",
            "it's",
            "a''b",
            "\\",
            "\\''",
            "'",
            "''",
            "x\\' || 1 --",
            "plain",
        ] {
            let mut v =
                sqlparser::ast::ValueWithSpan::from(Value::SingleQuotedString(value.into()));
            let _ = Printable.post_visit_value(&mut v);
            let printed = v.value.to_string();
            assert_eq!(
                postgresql_reads(&printed).as_deref(),
                Some(value),
                "{printed}"
            );
        }
    }
}

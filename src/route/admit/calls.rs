//! The calls inside an admitted statement: the constructs that reach past its tables (files,
//! functions of other schemas, stored and loadable functions, sequence functions of another
//! shape, `SELECT ... INTO`), and function calls spelled as MariaDB reads a built-in.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArguments, Query, SetExpr, Statement, TableFactor, Visit, Visitor,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::tokenizer::Token;

use super::tables::{SEQUENCE_FUNCTIONS, sequence_of};
use crate::route::{RouteError, builtins};

/// What reaches the backend host itself rather than the data: reading or writing its files,
/// functions of other schemas, MariaDB sequences (named by table), `SELECT ... INTO`.
/// Function calls spelled as MariaDB reads a built-in: the name unquoted and `(` right after
/// it. MariaDB takes its function keywords (`builtins::FUNCTION_KEYWORDS`: COUNT, MAX, NOW,
/// CURDATE, SUBSTRING, TRIM, window functions, ...) as such only then; `now ()`, `now/**/()`
/// and `` `now`() `` name a stored function of the current database, which the parser here
/// still reads as the built-in. The other built-ins are keywords or native functions, read as
/// such with white space before the `(` too (`LENGTH (a)`, `IF (a, b, c)`); quoted, every
/// name stays refused.
///
/// Errors: 1235 naming the function.
pub(super) fn check_call_spelling(statement: &Statement, text: &str) -> Result<(), RouteError> {
    struct Calls {
        /// Where each called name starts (line, column), as the tokenizer counts.
        names: BTreeSet<(u64, u64)>,
        /// Where each SQL-standard niladic function written without parentheses starts
        /// (`CURRENT_DATE`): a keyword to MariaDB, never a stored function.
        bare: BTreeSet<(u64, u64)>,
        quoted: Option<String>,
    }
    /// The functions SQL (and MariaDB) lets a statement write as a bare keyword.
    const NILADIC: &[&str] = &[
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "UTC_DATE",
        "UTC_TIME",
        "UTC_TIMESTAMP",
    ];
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && let Some(id) = f.name.0.last().and_then(|p| p.as_ident())
            {
                if id.quote_style.is_some() {
                    self.quoted = Some(id.value.clone());
                    return ControlFlow::Break(());
                }
                let at = (id.span.start.line, id.span.start.column);
                if matches!(f.args, sqlparser::ast::FunctionArguments::None)
                    && f.name.0.len() == 1
                    && NILADIC.iter().any(|n| id.value.eq_ignore_ascii_case(n))
                {
                    self.bare.insert(at);
                } else {
                    self.names.insert(at);
                }
            }
            ControlFlow::Continue(())
        }
    }
    let spelling = |name: &str| {
        RouteError::not_supported(format!(
            "write the call of {name} as {name}(...), unquoted and with nothing between the name and the parenthesis: MariaDB reads any other spelling as a stored function of the database"
        ))
    };
    let mut calls = Calls {
        names: BTreeSet::new(),
        bare: BTreeSet::new(),
        quoted: None,
    };
    let _ = statement.visit(&mut calls);
    if let Some(name) = calls.quoted {
        return Err(spelling(&name));
    }
    // Built-ins the parser reads as their own expressions (SUBSTRING, TRIM, CAST, ...), not
    // as calls: by their words, wherever a `(` follows after a gap.
    const KEYWORD_CALLS: &[&str] = &[
        "CAST",
        "TRY_CAST",
        "SAFE_CAST",
        "TRY_CONVERT",
        "EXTRACT",
        "CEIL",
        "CEILING",
        "FLOOR",
        "POSITION",
        "SUBSTR",
        "SUBSTRING",
        "OVERLAY",
        "TRIM",
    ];
    let keyword_calls = KEYWORD_CALLS
        .iter()
        .any(|k| crate::route::scan::contains_ignore_ascii_case(text, k));
    if calls.names.is_empty() && !keyword_calls {
        return Ok(());
    }
    let Ok(tokens) =
        sqlparser::tokenizer::Tokenizer::new(&MySqlDialect {}, text).tokenize_with_location()
    else {
        return Err(RouteError::syntax("the statement cannot be tokenized"));
    };
    let mut found = 0;
    for (i, t) in tokens.iter().enumerate() {
        let Token::Word(w) = &t.token else { continue };
        if keyword_calls
            && w.quote_style.is_none()
            && KEYWORD_CALLS
                .iter()
                .any(|k| w.value.eq_ignore_ascii_case(k))
        {
            let gap = tokens[i + 1..]
                .iter()
                .take_while(|t| matches!(t.token, Token::Whitespace(_)))
                .count();
            if gap > 0
                && matches!(
                    tokens.get(i + 1 + gap).map(|t| &t.token),
                    Some(Token::LParen)
                )
                && (builtins::needs_adjacent_parenthesis(&w.value)
                    || !builtins::is_builtin(&w.value, false))
            {
                return Err(spelling(&w.value));
            }
        }
        let at = (t.span.start.line, t.span.start.column);
        if calls.bare.contains(&at) {
            // `CURRENT_DATE` alone; `CURRENT_DATE ()` (a gap, then a parenthesis) stays
            // refused below as any other spelling.
            let next = tokens[i + 1..]
                .iter()
                .find(|t| !matches!(t.token, Token::Whitespace(_)));
            if next.is_some_and(|t| matches!(t.token, Token::LParen)) {
                return Err(spelling(&w.value));
            }
            continue;
        }
        if !calls.names.contains(&at) {
            continue;
        }
        found += 1;
        // `NEXT VALUE FOR s` / `PREVIOUS VALUE FOR s`: read as NEXTVAL(s) / LASTVAL(s)
        // (module `forms`), where the call stands.
        let mut next = tokens[i + 1..]
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .map(|t| match &t.token {
                Token::Word(x) if x.quote_style.is_none() => x.value.to_ascii_uppercase(),
                _ => String::new(),
            });
        let sequence_expression = w.quote_style.is_none()
            && (w.value.eq_ignore_ascii_case("NEXT") || w.value.eq_ignore_ascii_case("PREVIOUS"))
            && next.next().as_deref() == Some("VALUE")
            && next.next().as_deref() == Some("FOR");
        // White space or a comment before the `(` is MariaDB's spelling of a built-in too,
        // except for its function keywords (`COUNT (x)` is a stored function `count`).
        let spaced_builtin = !builtins::needs_adjacent_parenthesis(&w.value)
            && tokens[i + 1..]
                .iter()
                .find(|t| !matches!(t.token, Token::Whitespace(_)))
                .is_some_and(|t| matches!(t.token, Token::LParen));
        if !sequence_expression
            && !spaced_builtin
            && !matches!(tokens.get(i + 1).map(|t| &t.token), Some(Token::LParen))
        {
            return Err(spelling(&w.value));
        }
    }
    // Every call must have been seen where the parse put it; otherwise the text and the parse
    // disagree, and nothing is sent.
    if found != calls.names.len() {
        return Err(RouteError::syntax(
            "the statement's function calls cannot be located in its text",
        ));
    }
    Ok(())
}

/// Why [`forbidden`] refused a statement.
pub(super) enum Refused {
    /// A construct that reaches past the statement's tables (1227, naming it).
    Denied(String),
    /// A function the gateway does not know (1235, the message).
    Unknown(String),
}

pub(super) fn forbidden(statement: &Statement, known: &dyn Fn(&str) -> bool) -> Option<Refused> {
    struct Find<'a>(Option<Refused>, &'a dyn Fn(&str) -> bool);
    /// `SELECT ... INTO` anywhere in a set expression, or MySQL 8's `TABLE t` (its name is
    /// not an AST table reference, so no check would see it).
    fn into_of(body: &SetExpr) -> bool {
        match body {
            SetExpr::Select(s) => s.into.is_some(),
            SetExpr::SetOperation { left, right, .. } => into_of(left) || into_of(right),
            SetExpr::Query(q) => into_of(&q.body),
            SetExpr::Table(_) => true,
            _ => false,
        }
    }
    impl Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e {
                let name = f
                    .name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.to_ascii_uppercase())
                    .unwrap_or_default();
                if f.name.0.len() == 1 && SEQUENCE_FUNCTIONS.contains(&name.as_str()) {
                    // A sequence function names its sequence as a table (`table_refs`);
                    // any other shape of call is refused.
                    if sequence_of(f).is_none() {
                        self.0 = Some(Refused::Denied(format!(
                            "function {} other than as {name}(sequence{})",
                            f.name,
                            if name == "SETVAL" {
                                ", value[, ...]"
                            } else {
                                ""
                            }
                        )));
                        return ControlFlow::Break(());
                    }
                    return ControlFlow::Continue(());
                }
                if f.name.0.len() > 1
                    || matches!(name.as_str(), "LOAD_FILE" | "SYS_EXEC" | "SYS_EVAL")
                {
                    self.0 = Some(Refused::Denied(format!("function {}", f.name)));
                    return ControlFlow::Break(());
                }
                // MariaDB's geometry constructors are built-ins only with their own argument
                // counts (POINT two, the others at least one); called otherwise, the name is
                // looked up as a stored function.
                let args = match &f.args {
                    FunctionArguments::List(l) => l.args.len(),
                    _ => 0,
                };
                let geometry_arity = match name.as_str() {
                    "POINT" => args == 2,
                    "LINESTRING" | "POLYGON" | "MULTIPOINT" | "MULTILINESTRING"
                    | "MULTIPOLYGON" | "GEOMETRYCOLLECTION" => args >= 1,
                    _ => true,
                };
                // Any other name is a stored or loadable function of the backend's database:
                // its body and its definer's rights are out of the gateway's sight.
                if !(self.1)(&name) || !geometry_arity {
                    self.0 = Some(Refused::Unknown(format!(
                        "function {} is not one of MariaDB's built-in functions: stored and loadable functions are not called through the gateway",
                        f.name
                    )));
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
        /// A function in FROM (`FROM f(...) x`, a table-valued function) is a call like any
        /// other: the same allow-list decides, and the forms sqlparser keeps apart are refused.
        fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
            let name = match t {
                TableFactor::Table {
                    name,
                    args: Some(_),
                    ..
                } => name,
                TableFactor::Function { name, .. } => name,
                TableFactor::TableFunction { .. } | TableFactor::UNNEST { .. } => {
                    self.0 = Some(Refused::Unknown(
                        "a function in FROM is not called through the gateway".to_string(),
                    ));
                    return ControlFlow::Break(());
                }
                _ => return ControlFlow::Continue(()),
            };
            let plain = name.0.len() == 1
                && name.0[0]
                    .as_ident()
                    .is_some_and(|i| (self.1)(&i.value.to_ascii_uppercase()));
            if !plain {
                self.0 = Some(Refused::Unknown(format!(
                    "function {name} in FROM is not one of the built-in functions the gateway lets through"
                )));
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            if into_of(&q.body) {
                self.0 = Some(Refused::Denied("SELECT ... INTO (or TABLE)".to_string()));
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut f = Find(None, known);
    let _ = statement.visit(&mut f);
    f.0
}

//! The allow-list: which parsed statements may reach a backend at all, and which tables each
//! one reads or writes (the input of the access check, module `access`).
//!
//! A statement is admitted by its kind, from the parse, never by its first word: queries,
//! INSERT / REPLACE, UPDATE, DELETE, and table DDL (CREATE / ALTER / DROP / TRUNCATE / RENAME
//! TABLE, CREATE / DROP INDEX). Everything else — accounts and grants, databases, server
//! administration, stored programs, views, dynamic SQL, file access, locks — is refused in every
//! schema, including one with a default dataNode (DECISIONS.md item 21). Inside admitted
//! statements the constructs that reach past the tables are refused too: `SELECT ... INTO`
//! (files, variables of a pooled connection), `LOAD_FILE`, functions of other databases, MariaDB
//! sequence functions (their argument is a table), and table options that touch files or other
//! servers (`DATA DIRECTORY`, `CONNECTION`, engines other than the local storage engines).

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterTableOperation, CreateTableLikeKind, Expr, FromTable, FunctionArguments, ObjectName,
    ObjectType, OnInsert, Query, RenameTableNameKind, SetExpr, Statement, TableFactor, TableObject,
    TableWithJoins, Visit, Visitor, visit_expressions,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::tokenizer::Token;

use super::RouteError;
use super::access::TableAccess;

/// What an admitted statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    Query,
    Insert,
    Update,
    Delete,
    /// Table DDL.
    Ddl,
}

/// One table a statement names: `(schema qualifier as written, table as written)`, and how the
/// statement uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub qualifier: Option<String>,
    pub table: String,
    pub access: TableAccess,
}

fn denied(what: &str) -> RouteError {
    RouteError {
        code: 1227,
        state: "42000",
        message: format!("Access denied; {what} is not available through the gateway"),
    }
}

fn unsupported(what: &str) -> RouteError {
    RouteError::syntax(format!(
        "{what} is not supported by the gateway: only queries, INSERT/REPLACE, UPDATE, DELETE and table DDL reach a backend"
    ))
}

/// The first two words of a statement's SQL, for messages (`CREATE USER`, `LOCK TABLES`).
pub fn kind_words(s: &Statement) -> String {
    let text = s.to_string();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The verdict on one parsed statement: its kind, or the refusal naming what it is.
///
/// `text` is the statement's canonical text (module `lex`), read for table options and, in
/// DDL, for qualified names the AST keeps outside its table references (`EXCHANGE PARTITION
/// ... WITH TABLE db.t`): each qualifier must satisfy `is_schema` (a logical schema).
///
/// Errors: 1227 for account, database, server and routine management and for constructs that
/// reach files or other servers or databases; 1064 for any other statement kind, naming it.
pub fn admit(
    statement: &Statement,
    text: &str,
    is_schema: &dyn Fn(&str) -> bool,
    known_function: &dyn Fn(&str) -> bool,
) -> Result<Admitted, RouteError> {
    let kind = match statement {
        Statement::Query(_) => Admitted::Query,
        Statement::Insert(_) => Admitted::Insert,
        Statement::Update(_) => Admitted::Update,
        Statement::Delete(_) => Admitted::Delete,
        Statement::CreateTable(ct) => {
            if ct.clone.is_some() {
                return Err(unsupported("CREATE TABLE ... CLONE"));
            }
            check_table_options(text)?;
            Admitted::Ddl
        }
        Statement::AlterTable(_) => {
            check_table_options(text)?;
            Admitted::Ddl
        }
        Statement::CreateIndex(_) | Statement::Truncate(_) | Statement::RenameTable(_) => {
            Admitted::Ddl
        }
        Statement::Drop {
            object_type: ObjectType::Table | ObjectType::Index,
            ..
        } => Admitted::Ddl,
        other => return Err(refusal(other)),
    };
    if kind == Admitted::Ddl {
        check_ddl_qualifiers(text, is_schema)?;
    }
    match forbidden(statement, known_function) {
        Some(Refused::Denied(what)) => return Err(denied(&what)),
        Some(Refused::Unknown(message)) => return Err(RouteError::not_supported(message)),
        None => {}
    }
    check_call_spelling(statement, text)?;
    Ok(kind)
}

/// Every `a.b` name in a DDL statement's tokens must be qualified by a logical schema: the AST
/// does not report every name of every DDL form as a table (partition exchange, foreign key
/// targets), so the text is read too. (`t.c` column references in CHECK constraints are refused
/// with them; write the column unqualified.)
fn check_ddl_qualifiers(text: &str, is_schema: &dyn Fn(&str) -> bool) -> Result<(), RouteError> {
    let Some(toks) = super::rewrite::tokens(text) else {
        return Err(RouteError::syntax("the statement cannot be tokenized"));
    };
    for w in toks.windows(3) {
        if let (Token::Word(q), Token::Period, Token::Word(_)) = (&w[0].0, &w[1].0, &w[2].0)
            && !is_schema(&q.value)
        {
            return Err(RouteError {
                code: 1044,
                state: "42000",
                message: format!(
                    "Access denied to database '{}': DDL through the gateway names only the logical schemas' tables",
                    q.value
                ),
            });
        }
    }
    Ok(())
}

/// The refusal of a statement kind outside the allow-list: 1227 for what manages accounts,
/// databases, the server or stored programs, or runs SQL from a string; 1064 for the rest.
fn refusal(s: &Statement) -> RouteError {
    const PRIVILEGED: &[&str] = &[
        "GRANT",
        "REVOKE",
        "USER",
        "ROLE",
        "PASSWORD",
        "DATABASE",
        "SCHEMA",
        "SERVER",
        "SHUTDOWN",
        "FLUSH",
        "KILL",
        "FUNCTION",
        "PROCEDURE",
        "TRIGGER",
        "EVENT",
        "VIEW",
        "LOAD",
        "INSTALL",
        "UNINSTALL",
        "PLUGIN",
        "PREPARE",
        "EXECUTE",
        "DEALLOCATE",
        "SET",
        "DROP",
        "CREATE",
        "ALTER",
        "SEQUENCE",
        "BINLOG",
        "PURGE",
        "RESET",
        "CHANGE",
        "START",
        "STOP",
    ];
    let what = kind_words(s);
    let upper = what.to_ascii_uppercase();
    if upper
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| PRIVILEGED.contains(&w))
    {
        denied(&what)
    } else {
        unsupported(&what)
    }
}

/// Storage engines that keep a table's rows in the server's own data directory. Others read
/// files (CONNECT), other servers (FEDERATED, FEDERATEDX, SPIDER, S3) or other tables (MERGE,
/// OQGRAPH), which the gateway cannot check.
pub(super) const LOCAL_ENGINES: &[&str] = &[
    "INNODB",
    "MYISAM",
    "ARIA",
    "MEMORY",
    "HEAP",
    "ARCHIVE",
    "BLACKHOLE",
    "CSV",
];

/// Table options of CREATE / ALTER TABLE that reach past the table: `DATA DIRECTORY`,
/// `INDEX DIRECTORY`, `CONNECTION`, and any engine not in [`LOCAL_ENGINES`].
fn check_table_options(text: &str) -> Result<(), RouteError> {
    let Some(toks) = super::rewrite::tokens(text) else {
        return Err(RouteError::syntax("the statement cannot be tokenized"));
    };
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    for (i, (t, _, _)) in toks.iter().enumerate() {
        let Some(w) = word(t) else { continue };
        match w.as_str() {
            "DIRECTORY" | "CONNECTION" => {
                return Err(denied(&format!("the table option {w}")));
            }
            "ENGINE" | "TYPE" if i > 0 || w == "ENGINE" => {
                let mut j = i + 1;
                if matches!(toks.get(j).map(|t| &t.0), Some(Token::Eq)) {
                    j += 1;
                }
                // `TYPE` is also a word of column definitions; only `ENGINE` and `TYPE =` name
                // an engine.
                if w == "TYPE" && j == i + 1 {
                    continue;
                }
                let engine = match toks.get(j).map(|t| &t.0) {
                    Some(Token::Word(e)) => e.value.to_ascii_uppercase(),
                    // Quoted either way: a string unless ANSI_QUOTES, a name then; an engine
                    // to MariaDB both times.
                    Some(
                        Token::SingleQuotedString(e)
                        | Token::DoubleQuotedString(e)
                        | Token::NationalStringLiteral(e),
                    ) => e.to_ascii_uppercase(),
                    _ => continue,
                };
                if !LOCAL_ENGINES.contains(&engine.as_str()) {
                    return Err(denied(&format!("the storage engine {engine}")));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What reaches the backend host itself rather than the data: reading or writing its files,
/// functions of other schemas, MariaDB sequences (named by table), `SELECT ... INTO`.
/// Function calls spelled as MariaDB reads a built-in: the name unquoted and `(` right after
/// it. MariaDB takes many built-ins (COUNT, MAX, NOW, CURDATE, SUBSTRING, TRIM, window
/// functions, ...) as such only then; `now ()`, `now/**/()` and `` `now`() `` name a stored
/// function of the current database, which the parser here still reads as the built-in.
///
/// Errors: 1235 naming the function.
fn check_call_spelling(statement: &Statement, text: &str) -> Result<(), RouteError> {
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
        .any(|k| super::scan::contains_ignore_ascii_case(text, k));
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
        if !sequence_expression
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
enum Refused {
    /// A construct that reaches past the statement's tables (1227, naming it).
    Denied(String),
    /// A function the gateway does not know (1235, the message).
    Unknown(String),
}

fn forbidden(statement: &Statement, known: &dyn Fn(&str) -> bool) -> Option<Refused> {
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

/// MariaDB's sequence functions (`NEXT VALUE FOR s` and `PREVIOUS VALUE FOR s` are read as
/// `NEXTVAL(s)` and `LASTVAL(s)`, module `forms`).
pub(super) const SEQUENCE_FUNCTIONS: &[&str] = &["NEXTVAL", "LASTVAL", "SETVAL"];

/// The sequence a call of a sequence function names, and the access MariaDB asks of it; `None`
/// when `f` is no such call or not of MariaDB's shape: `NEXTVAL(s)`, `LASTVAL(s)`,
/// `SETVAL(s, n[, used[, round]])`, `s` a name or `db.s`, plain arguments (no DISTINCT, ORDER
/// BY, FILTER, OVER).
///
/// The privileges are MariaDB 10.11's, as a grant-limited account meets them: NEXTVAL needs
/// INSERT and SELECT on the sequence (the documentation names INSERT; the server also checks
/// SELECT), SETVAL INSERT, LASTVAL SELECT.
pub(super) fn sequence_of(
    f: &sqlparser::ast::Function,
) -> Option<(ObjectName, &'static [TableAccess])> {
    let [part] = f.name.0.as_slice() else {
        return None;
    };
    let name = part.as_ident()?;
    if name.quote_style.is_some() {
        return None;
    }
    let (arity, access): (std::ops::RangeInclusive<usize>, &'static [TableAccess]) =
        match name.value.to_ascii_uppercase().as_str() {
            "NEXTVAL" => (1..=1, &[TableAccess::Insert, TableAccess::Select]),
            "LASTVAL" => (1..=1, &[TableAccess::Select]),
            "SETVAL" => (2..=4, &[TableAccess::Insert]),
            _ => return None,
        };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some()
        || !list.clauses.is_empty()
        || f.filter.is_some()
        || f.over.is_some()
        || !f.within_group.is_empty()
        || !matches!(f.parameters, FunctionArguments::None)
        || !arity.contains(&list.args.len())
    {
        return None;
    }
    let sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(first)) =
        &list.args[0]
    else {
        return None;
    };
    let parts = match first {
        Expr::Identifier(i) => vec![i.clone()],
        Expr::CompoundIdentifier(p) if p.len() == 2 => p.clone(),
        _ => return None,
    };
    let object = ObjectName(
        parts
            .into_iter()
            .map(sqlparser::ast::ObjectNamePart::Identifier)
            .collect(),
    );
    Some((object, access))
}

/// Every sequence `statement` names in a sequence function call, in order, with the access
/// MariaDB asks of it ([`sequence_of`]).
pub fn sequence_refs(statement: &Statement) -> Vec<(ObjectName, &'static [TableAccess])> {
    struct Calls(Vec<(ObjectName, &'static [TableAccess])>);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && let Some(found) = sequence_of(f)
            {
                self.0.push(found);
            }
            ControlFlow::Continue(())
        }
    }
    let mut calls = Calls(Vec::new());
    let _ = statement.visit(&mut calls);
    calls.0
}

/// `(qualifier, table)` of a possibly schema-qualified name.
pub fn split_name(name: &ObjectName) -> (Option<String>, String) {
    let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    let table = parts.last().map(|i| i.value.clone()).unwrap_or_default();
    let qualifier = (parts.len() >= 2).then(|| parts[parts.len() - 2].value.clone());
    (qualifier, table)
}

/// Whether `e` names a column anywhere (an update value that reads the row).
fn reads_columns(e: &Expr) -> bool {
    visit_expressions(e, |x| match x {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Every table `statement` names and how it uses each (module docs of `access`): the targets
/// of INSERT / UPDATE / DELETE with their kind, every table of DDL as [`TableAccess::Ddl`], and
/// every other table the statement reads (subqueries, joins, UNION branches, derived tables,
/// CTE bodies, INSERT ... SELECT sources) as [`TableAccess::Select`]. A table may appear with
/// several accesses, by MariaDB's privilege rules: REPLACE also deletes, ON DUPLICATE KEY
/// UPDATE also updates, and an UPDATE or DELETE that reads columns (WHERE, ORDER BY, a value
/// over columns) also selects. A name that refers to a common table expression where it
/// stands (MariaDB's scoping: a query's WITH names are visible in its body, a CTE body sees
/// only those defined before it, or itself under RECURSIVE) is no table and is left out, as is
/// an unquoted `DUAL`.
pub fn table_refs(statement: &Statement) -> Vec<TableRef> {
    /// The relations of a statement that name tables, with the names of common table
    /// expressions resolved by MariaDB's scoping: a query's WITH names are visible in its body
    /// (and the subqueries there), and in each CTE body only the CTEs defined before it (and
    /// itself, under RECURSIVE). A name is a CTE only where it is visible, so `WITH secret AS
    /// (SELECT * FROM secret) ...` still reads the table `secret`.
    struct Relations {
        names: Vec<ObjectName>,
        /// One frame per query being visited, innermost last.
        frames: Vec<Frame>,
    }
    struct Frame {
        /// The CTE names visible in the query's body.
        body: BTreeSet<String>,
        /// Each CTE body of the query (by address, only compared) and the names it sees.
        ctes: Vec<(*const Query, BTreeSet<String>)>,
    }
    impl Visitor for Relations {
        type Break = ();
        fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
            let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
            let cte = match parts.as_slice() {
                [one] => self
                    .frames
                    .last()
                    .is_some_and(|f| f.body.contains(&one.value.to_ascii_uppercase())),
                _ => false,
            };
            // Unquoted DUAL is no table; `dual` in backquotes is one.
            let dual = matches!(parts.as_slice(), [one]
                if one.quote_style.is_none() && one.value.eq_ignore_ascii_case("DUAL"));
            if !cte && !dual {
                self.names.push(name.clone());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            // What the enclosing query lets `q` see: a CTE body sees the CTEs defined before
            // it (and itself under RECURSIVE), anything else there sees all of them.
            let inherited = match self.frames.last() {
                None => BTreeSet::new(),
                Some(parent) => parent
                    .ctes
                    .iter()
                    .find(|(at, _)| std::ptr::eq(*at, q))
                    .map_or_else(|| parent.body.clone(), |(_, seen)| seen.clone()),
            };
            let mut body = inherited.clone();
            let mut ctes = Vec::new();
            if let Some(with) = &q.with {
                let mut before = inherited;
                for cte in &with.cte_tables {
                    let name = cte.alias.name.value.to_ascii_uppercase();
                    let mut seen = before.clone();
                    if with.recursive {
                        seen.insert(name.clone());
                    }
                    ctes.push((&*cte.query as *const Query, seen));
                    before.insert(name.clone());
                    body.insert(name);
                }
            }
            self.frames.push(Frame { body, ctes });
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.frames.pop();
            ControlFlow::Continue(())
        }
    }
    let mut v = Relations {
        names: Vec::new(),
        frames: Vec::new(),
    };
    let _ = statement.visit(&mut v);
    let mut targets: Vec<(ObjectName, TableAccess)> = Vec::new();
    let joined = |t: &TableWithJoins| -> Vec<ObjectName> {
        std::iter::once(&t.relation)
            .chain(t.joins.iter().map(|j| &j.relation))
            .filter_map(|f| match f {
                TableFactor::Table { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    };
    match statement {
        Statement::Insert(i) => {
            if let TableObject::TableName(n) = &i.table {
                targets.push((n.clone(), TableAccess::Insert));
                // MariaDB's rules: REPLACE may delete, ON DUPLICATE KEY UPDATE updates, and an
                // update value that reads a column reads the table.
                if i.replace_into {
                    targets.push((n.clone(), TableAccess::Delete));
                }
                if let Some(OnInsert::DuplicateKeyUpdate(set)) = &i.on {
                    targets.push((n.clone(), TableAccess::Update));
                    if set.iter().any(|a| reads_columns(&a.value)) {
                        targets.push((n.clone(), TableAccess::Select));
                    }
                }
            }
        }
        Statement::Update(u) => {
            // Reading columns (WHERE, ORDER BY, a value over columns) needs SELECT too, as in
            // MariaDB: otherwise the count of changed rows answers questions about the data.
            let reads = u.selection.is_some()
                || !u.order_by.is_empty()
                || u.assignments.iter().any(|a| reads_columns(&a.value));
            for n in joined(&u.table) {
                targets.push((n.clone(), TableAccess::Update));
                if reads {
                    targets.push((n, TableAccess::Select));
                }
            }
        }
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            // Multi-table DELETE: every table it joins may lose rows (conservative).
            let reads = d.selection.is_some() || !d.order_by.is_empty();
            for t in from.iter().chain(d.using.iter().flatten()) {
                for n in joined(t) {
                    targets.push((n.clone(), TableAccess::Delete));
                    if reads {
                        targets.push((n, TableAccess::Select));
                    }
                }
            }
            // `DELETE a, b FROM ...` names aliases or tables; as tables they are targets too.
            for n in &d.tables {
                targets.push((n.clone(), TableAccess::Delete));
                v.names.retain(|x| x != n);
            }
        }
        Statement::CreateTable(ct) => {
            targets.push((ct.name.clone(), TableAccess::Ddl));
            match &ct.like {
                Some(CreateTableLikeKind::Plain(l) | CreateTableLikeKind::Parenthesized(l)) => {
                    v.names.push(l.name.clone());
                }
                None => {}
            }
        }
        Statement::AlterTable(at) => {
            targets.push((at.name.clone(), TableAccess::Ddl));
            for op in &at.operations {
                if let AlterTableOperation::RenameTable {
                    table_name: RenameTableNameKind::As(n) | RenameTableNameKind::To(n),
                } = op
                {
                    targets.push((n.clone(), TableAccess::Ddl));
                }
            }
        }
        Statement::CreateIndex(ci) => targets.push((ci.table_name.clone(), TableAccess::Ddl)),
        Statement::Truncate(t) => {
            for t in &t.table_names {
                targets.push((t.name.clone(), TableAccess::Ddl));
            }
        }
        Statement::RenameTable(rs) => {
            for r in rs {
                targets.push((r.old_name.clone(), TableAccess::Ddl));
                targets.push((r.new_name.clone(), TableAccess::Ddl));
            }
        }
        Statement::Drop {
            object_type: ObjectType::Table,
            names,
            ..
        } => {
            for n in names {
                targets.push((n.clone(), TableAccess::Ddl));
            }
        }
        Statement::Drop {
            object_type: ObjectType::Index,
            table: Some(t),
            ..
        } => targets.push((t.clone(), TableAccess::Ddl)),
        _ => {}
    }
    // A target is also visited as a relation: each target table takes one of those
    // occurrences (once, however many accesses it has).
    let mut taken: Vec<&ObjectName> = Vec::new();
    for (n, _) in &targets {
        if taken.contains(&n) {
            continue;
        }
        taken.push(n);
        if let Some(i) = v.names.iter().position(|x| x == n) {
            v.names.remove(i);
        }
    }
    let reads = v.names.into_iter().map(|n| (n, TableAccess::Select));
    // Sequences named in sequence functions (`NEXTVAL(s)`): tables to MariaDB's privileges.
    let sequences = sequence_refs(statement)
        .into_iter()
        .flat_map(|(n, access)| access.iter().map(move |a| (n.clone(), *a)));
    targets
        .into_iter()
        .chain(reads)
        .chain(sequences)
        .map(|(n, access)| {
            let (qualifier, table) = split_name(&n);
            TableRef {
                qualifier,
                table,
                access,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::MySqlDialect;
    use sqlparser::parser::Parser;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&MySqlDialect {}, sql).unwrap().remove(0)
    }

    fn refs(sql: &str) -> Vec<(Option<String>, String, TableAccess)> {
        let mut v: Vec<_> = table_refs(&parse(sql))
            .into_iter()
            .map(|r| (r.qualifier, r.table, r.access))
            .collect();
        v.sort();
        v
    }

    fn t(q: Option<&str>, n: &str, a: TableAccess) -> (Option<String>, String, TableAccess) {
        (q.map(String::from), n.to_string(), a)
    }

    #[test]
    fn every_table_of_a_statement_is_named_with_its_access() {
        use TableAccess::*;
        assert_eq!(
            refs(
                "SELECT * FROM a JOIN b ON a.x = b.x WHERE a.y IN (SELECT y FROM c) UNION SELECT * FROM A2.d"
            ),
            [
                t(None, "a", Select),
                t(None, "b", Select),
                t(None, "c", Select),
                t(Some("A2"), "d", Select)
            ]
        );
        assert_eq!(
            refs("INSERT INTO t SELECT * FROM s"),
            [t(None, "s", Select), t(None, "t", Insert)]
        );
        assert_eq!(
            refs("UPDATE t JOIN u ON t.a = u.a SET t.b = 1 WHERE t.c = (SELECT MAX(c) FROM w)"),
            [
                t(None, "t", Update),
                t(None, "t", Select),
                t(None, "u", Update),
                t(None, "u", Select),
                t(None, "w", Select)
            ]
        );
        assert_eq!(
            refs("DELETE FROM A.secret WHERE id = 1"),
            [
                t(Some("A"), "secret", Select),
                t(Some("A"), "secret", Delete)
            ]
        );
        // What MariaDB asks of an account, besides the statement's own privilege.
        assert_eq!(refs("DELETE FROM t"), [t(None, "t", Delete)]);
        assert_eq!(refs("UPDATE t SET a = 1 LIMIT 1"), [t(None, "t", Update)]);
        assert_eq!(
            refs("UPDATE t SET a = b"),
            [t(None, "t", Update), t(None, "t", Select)]
        );
        assert_eq!(
            refs("REPLACE INTO t VALUES (1)"),
            [t(None, "t", Insert), t(None, "t", Delete)]
        );
        assert_eq!(
            refs("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2"),
            [t(None, "t", Insert), t(None, "t", Update)]
        );
        assert_eq!(
            refs("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1"),
            [
                t(None, "t", Insert),
                t(None, "t", Update),
                t(None, "t", Select)
            ]
        );
        assert_eq!(
            refs("REPLACE INTO t SELECT * FROM t"),
            [
                t(None, "t", Insert),
                t(None, "t", Select),
                t(None, "t", Delete)
            ]
        );
        assert_eq!(
            refs("WITH x AS (SELECT * FROM real_t) SELECT * FROM x"),
            [t(None, "real_t", Select)]
        );
        assert_eq!(
            refs("DROP TABLE a, b"),
            [t(None, "a", Ddl), t(None, "b", Ddl)]
        );
        assert_eq!(
            refs("RENAME TABLE a TO other.b"),
            [t(None, "a", Ddl), t(Some("other"), "b", Ddl)]
        );
        assert_eq!(
            refs("ALTER TABLE a RENAME TO other.b"),
            [t(None, "a", Ddl), t(Some("other"), "b", Ddl)]
        );
        assert_eq!(
            refs("CREATE TABLE a LIKE mysql.user"),
            [t(None, "a", Ddl), t(Some("mysql"), "user", Select)]
        );
        assert_eq!(refs("SELECT 1 FROM DUAL"), []);
        assert_eq!(refs("SELECT 1 FROM `dual`"), [t(None, "dual", Select)]);
        // A CTE name hides a table only where MariaDB resolves it to the CTE.
        assert_eq!(
            refs("WITH secret AS (SELECT * FROM secret) SELECT * FROM secret"),
            [t(None, "secret", Select)]
        );
        assert_eq!(
            refs(
                "SELECT * FROM secret WHERE 1 IN (WITH secret AS (SELECT 1) SELECT * FROM secret)"
            ),
            [t(None, "secret", Select)]
        );
        assert_eq!(
            refs("INSERT INTO r SELECT * FROM (WITH r AS (SELECT 5) SELECT * FROM r) d"),
            [t(None, "r", Insert)]
        );
        assert_eq!(
            refs("WITH a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT * FROM b"),
            [t(None, "b", Select)]
        );
        assert_eq!(
            refs("WITH RECURSIVE a AS (SELECT 1 UNION SELECT * FROM a) SELECT * FROM a"),
            []
        );
        assert_eq!(
            refs("WITH x AS (SELECT 1) SELECT * FROM (SELECT * FROM x) d JOIN y"),
            [t(None, "y", Select)]
        );
    }

    /// MariaDB sequences are tables to the access checks, with MariaDB's privileges.
    #[test]
    fn sequences_are_table_references() {
        use TableAccess::*;
        let forms = |sql: &str| -> Vec<(Option<String>, String, TableAccess)> {
            let statement = crate::route::forms::parse(sql).unwrap().remove(0);
            let known = |n: &str| crate::route::builtins::is_builtin(n, false);
            admit(&statement, sql, &|q| q == "A", &known).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let mut v: Vec<_> = table_refs(&statement)
                .into_iter()
                .map(|r| (r.qualifier, r.table, r.access))
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            forms("SELECT NEXTVAL(s)"),
            [t(None, "s", Insert), t(None, "s", Select)]
        );
        assert_eq!(
            forms("SELECT next value for A.s, PREVIOUS VALUE FOR `s2`"),
            [
                t(None, "s2", Select),
                t(Some("A"), "s", Insert),
                t(Some("A"), "s", Select)
            ]
        );
        assert_eq!(forms("SELECT SETVAL(s, 10, 1, 0)"), [t(None, "s", Insert)]);
        assert_eq!(
            forms("INSERT INTO t (a) VALUES (LASTVAL(s))"),
            [t(None, "s", Select), t(None, "t", Insert)]
        );
        assert_eq!(
            forms("CREATE TABLE t (a INT DEFAULT NEXT VALUE FOR s)"),
            [
                t(None, "s", Insert),
                t(None, "s", Select),
                t(None, "t", Ddl)
            ]
        );
    }

    #[test]
    fn calls_are_spelled_as_builtins_are() {
        let known = |n: &str| crate::route::builtins::is_builtin(n, false);
        for sql in [
            "SELECT now()",
            "SELECT COUNT(*), MAX(a) FROM t",
            "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)",
            "SELECT\n  concat('a', 'b'),\n  ifnull(x, 1) FROM t",
            "SELECT trim(v), substring(v, 1, 2), point(1, 2) FROM t",
            // SQL's niladic functions written as keywords (SQLAlchemy's server defaults).
            "SELECT CURRENT_DATE, current_timestamp, LOCALTIME, utc_timestamp FROM t",
            "CREATE TABLE t (a TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
        ] {
            assert!(admit(&parse(sql), sql, &|_| false, &known).is_ok(), "{sql}");
        }
        for sql in [
            "SELECT now ()",
            "SELECT now/**/()",
            "SELECT `now`()",
            "SELECT max (a) FROM t",
            "SELECT a FROM t WHERE b = curdate\n()",
            "SELECT CURRENT_DATE ()",
            "SELECT current_timestamp/**/(3)",
            // Parsed as expressions of their own, not calls.
            "SELECT trim (1)",
            "SELECT substring/**/(v, 1) FROM t",
            "SELECT substr\n(v, 1) FROM t",
            // Geometry constructors at another argument count are stored functions.
            "SELECT point(1)",
            "SELECT linestring()",
        ] {
            let e = admit(&parse(sql), sql, &|_| false, &known).unwrap_err();
            assert_eq!(e.code, 1235, "{sql}: {}", e.message);
        }
    }

    #[test]
    fn only_the_allow_list_is_admitted() {
        for sql in [
            "SELECT 1",
            "INSERT INTO t VALUES (1)",
            "REPLACE INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "DELETE FROM t",
            "CREATE TABLE t (id INT) ENGINE=InnoDB",
            "ALTER TABLE t ADD COLUMN c INT",
            "DROP TABLE t",
            "TRUNCATE TABLE t",
            "CREATE INDEX i ON t (a)",
            "RENAME TABLE a TO b",
        ] {
            assert!(
                admit(&parse(sql), sql, &|_| false, &|n| {
                    crate::route::builtins::is_builtin(n, false)
                })
                .is_ok(),
                "{sql}"
            );
        }
        for (sql, code) in [
            ("GRANT ALL ON *.* TO evil", 1227),
            ("CREATE USER 'evil'@'%'", 1227),
            ("CREATE ROLE r", 1227),
            ("DROP USER evil", 1227),
            ("CREATE PROCEDURE p() SELECT 1", 1227),
            ("LOCK TABLES t WRITE", 1064),
            ("CALL p()", 1064),
            ("DROP DATABASE mysql", 1227),
            ("CREATE DATABASE x", 1227),
            ("FLUSH PRIVILEGES", 1227),
            ("CREATE VIEW v AS SELECT 1", 1227),
            ("SELECT * FROM t INTO OUTFILE '/tmp/x'", 1227),
            ("SELECT 1 UNION SELECT 2 INTO OUTFILE '/tmp/x'", 1227),
            ("SELECT LOAD_FILE('/etc/passwd')", 1227),
            ("SELECT sys.ps_thread_id(1)", 1227),
            ("SELECT NEXTVAL(other.seq, 1)", 1227),
            ("SELECT NEXTVAL('seq')", 1227),
            ("SELECT SETVAL(seq)", 1227),
            ("SELECT NEXTVAL(a.b.seq)", 1227),
            ("SELECT NEXTVAL(DISTINCT seq)", 1227),
            (
                "CREATE TABLE t (id INT) ENGINE=CONNECT TABLE_TYPE=CSV FILE_NAME='/etc/passwd'",
                1227,
            ),
            (
                "CREATE TABLE t (id INT) ENGINE = 'FEDERATED' CONNECTION='mysql://x'",
                1227,
            ),
            ("CREATE TABLE t (id INT) DATA DIRECTORY = '/tmp'", 1227),
            ("ALTER TABLE t ENGINE = MERGE", 1227),
            (
                "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE victim.vt",
                1044,
            ),
            (
                "CREATE TABLE t (id INT, FOREIGN KEY (id) REFERENCES victim.vt (id))",
                1044,
            ),
            ("TABLE victim.vt", 1227),
        ] {
            // What sqlparser cannot read is refused before this (1064 at routing).
            let Ok(mut parsed) = Parser::parse_sql(&MySqlDialect {}, sql) else {
                continue;
            };
            match admit(&parsed.remove(0), sql, &|q| q == "A", &|n| {
                crate::route::builtins::is_builtin(n, false)
            }) {
                Err(e) => assert_eq!(e.code, code, "{sql}: {}", e.message),
                Ok(k) => panic!("{sql} admitted as {k:?}"),
            }
        }
    }
}

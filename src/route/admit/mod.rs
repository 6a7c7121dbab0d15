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

use crate::route::Refusal;
use sqlparser::ast::{AlterTableOperation, Ident, ObjectName, ObjectType, Statement};
use sqlparser::tokenizer::Token;

use super::RouteError;

mod calls;
mod tables;
#[cfg(test)]
mod tests;

use calls::{Refused, check_call_spelling, forbidden};
use tables::foreign_key_targets;
pub(super) use tables::sequence_of;
pub use tables::{split_name, table_refs};

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

fn denied(what: &str) -> RouteError {
    RouteError::new(
        Refusal::PrivilegeRequired,
        format!("Access denied; {what} is not available through the gateway"),
    )
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
            check_column_names(ct.columns.iter().map(|c| &c.name))?;
            Admitted::Ddl
        }
        Statement::AlterTable(at) => {
            check_table_options(text)?;
            check_column_names(at.operations.iter().filter_map(|op| match op {
                AlterTableOperation::AddColumn { column_def, .. } => Some(&column_def.name),
                _ => None,
            }))?;
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
        let has_query = matches!(statement, Statement::CreateTable(ct) if ct.query.is_some());
        check_ddl_qualifiers(text, has_query, is_schema)?;
    }
    match statement {
        Statement::CreateTable(ct) => check_foreign_keys(statement, &ct.name, text)?,
        Statement::AlterTable(at) => check_foreign_keys(statement, &at.name, text)?,
        _ => {}
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
/// with them; write the column unqualified.) With `has_query` (`CREATE TABLE .. SELECT`), the
/// reading stops at the query's first `SELECT` / `WITH` / `VALUES`: the query's `alias.column`
/// names are not tables, and its tables are checked as any query's.
fn check_ddl_qualifiers(
    text: &str,
    has_query: bool,
    is_schema: &dyn Fn(&str) -> bool,
) -> Result<(), RouteError> {
    let Some(toks) = super::rewrite::tokens(text) else {
        return Err(RouteError::syntax("the statement cannot be tokenized"));
    };
    // (Not a word after a `.`: `victim.select` is a table's name.)
    let end = (0..toks.len())
        .find(|&i| {
            has_query
                && !(i > 0 && matches!(toks[i - 1].0, Token::Period))
                && matches!(&toks[i].0, Token::Word(w) if w.quote_style.is_none()
                    && ["SELECT", "WITH", "VALUES"].iter().any(|k| w.value.eq_ignore_ascii_case(k)))
        })
        .unwrap_or(toks.len());
    for w in toks[..end].windows(3) {
        if let (Token::Word(q), Token::Period, Token::Word(_)) = (&w[0].0, &w[1].0, &w[2].0)
            && !is_schema(&q.value)
        {
            return Err(RouteError::new(
                Refusal::DatabaseAccessDenied,
                format!(
                    "Access denied to database '{}': DDL through the gateway names only the logical schemas' tables",
                    q.value
                ),
            ));
        }
    }
    Ok(())
}

/// MariaDB 10.11's reserved words (its manual, "Reserved Words"), less a few that only some
/// versions reserve: none of them is a column name unless quoted.
#[rustfmt::skip]
const RESERVED: &[&str] = &[
    "ACCESSIBLE", "ADD", "ALL", "ALTER", "ANALYZE", "AND", "AS", "ASC", "ASENSITIVE", "BEFORE",
    "BETWEEN", "BIGINT", "BINARY", "BLOB", "BOTH", "BY", "CALL", "CASCADE", "CASE", "CHANGE",
    "CHAR", "CHARACTER", "CHECK", "COLLATE", "COLUMN", "CONDITION", "CONSTRAINT", "CONTINUE",
    "CONVERT", "CREATE", "CROSS", "CURRENT_DATE", "CURRENT_ROLE", "CURRENT_TIME",
    "CURRENT_TIMESTAMP", "CURRENT_USER", "CURSOR", "DATABASE", "DATABASES", "DAY_HOUR",
    "DAY_MICROSECOND", "DAY_MINUTE", "DAY_SECOND", "DEC", "DECIMAL", "DECLARE", "DEFAULT",
    "DELAYED", "DELETE", "DESC", "DESCRIBE", "DETERMINISTIC", "DISTINCT", "DISTINCTROW", "DIV",
    "DOUBLE", "DROP", "DUAL", "EACH", "ELSE", "ELSEIF", "ENCLOSED", "ESCAPED", "EXISTS", "EXIT",
    "EXPLAIN", "FALSE", "FETCH", "FLOAT", "FLOAT4", "FLOAT8", "FOR", "FORCE", "FOREIGN", "FROM",
    "FULLTEXT", "GRANT", "GROUP", "HAVING", "HIGH_PRIORITY", "HOUR_MICROSECOND", "HOUR_MINUTE",
    "HOUR_SECOND", "IF", "IGNORE", "IN", "INDEX", "INFILE", "INNER", "INOUT", "INSENSITIVE",
    "INSERT", "INT", "INT1", "INT2", "INT3", "INT4", "INT8", "INTEGER", "INTERVAL", "INTO", "IS",
    "ITERATE", "JOIN", "KEY", "KEYS", "KILL", "LEADING", "LEAVE", "LEFT", "LIKE", "LIMIT",
    "LINEAR", "LINES", "LOAD", "LOCALTIME", "LOCALTIMESTAMP", "LOCK", "LONG", "LONGBLOB",
    "LONGTEXT", "LOOP", "LOW_PRIORITY", "MATCH", "MAXVALUE", "MEDIUMBLOB", "MEDIUMINT",
    "MEDIUMTEXT", "MIDDLEINT", "MINUTE_MICROSECOND", "MINUTE_SECOND", "MOD", "MODIFIES",
    "NATURAL", "NOT", "NO_WRITE_TO_BINLOG", "NULL", "NUMERIC", "ON", "OPTIMIZE", "OPTION",
    "OPTIONALLY", "OR", "ORDER", "OUT", "OUTER", "OUTFILE", "PARTITION", "PRECISION", "PRIMARY",
    "PROCEDURE", "PURGE", "RANGE", "READ", "READS", "READ_WRITE", "REAL", "RECURSIVE",
    "REFERENCES", "REGEXP", "RELEASE", "RENAME", "REPEAT", "REPLACE", "REQUIRE", "RESIGNAL",
    "RESTRICT", "RETURN", "REVOKE", "RIGHT", "RLIKE", "ROWS", "SCHEMA", "SCHEMAS",
    "SECOND_MICROSECOND", "SELECT", "SENSITIVE", "SEPARATOR", "SET", "SHOW", "SIGNAL",
    "SMALLINT", "SPATIAL", "SPECIFIC", "SQL", "SQLEXCEPTION", "SQLSTATE", "SQLWARNING",
    "SQL_BIG_RESULT", "SQL_CALC_FOUND_ROWS", "SQL_SMALL_RESULT", "SSL", "STARTING",
    "STRAIGHT_JOIN", "TABLE", "TERMINATED", "THEN", "TINYBLOB", "TINYINT", "TINYTEXT", "TO",
    "TRAILING", "TRIGGER", "TRUE", "UNDO", "UNION", "UNIQUE", "UNLOCK", "UNSIGNED", "UPDATE",
    "USAGE", "USE", "USING", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "VALUES", "VARBINARY",
    "VARCHAR", "VARCHARACTER", "VARYING", "WHEN", "WHERE", "WHILE", "WITH", "WRITE", "XOR",
    "YEAR_MONTH", "ZEROFILL",
];

/// The columns a CREATE / ALTER TABLE defines must not be named by an unquoted reserved word:
/// MariaDB would not read such a column, so the parse is not the statement MariaDB runs
/// (`CREATE TABLE x (LIKE t)` and `(TABLE t)` read as a column `LIKE` / `TABLE` of a type `t`
/// would hide the table `t` from the access check).
///
/// Errors: 1064 naming the word.
fn check_column_names<'a>(names: impl Iterator<Item = &'a Ident>) -> Result<(), RouteError> {
    for name in names {
        if name.quote_style.is_none()
            && RESERVED.contains(&name.value.to_ascii_uppercase().as_str())
        {
            return Err(RouteError::syntax(format!(
                "'{}' is a reserved word: the gateway does not read this table definition (quote a column of that name)",
                name.value
            )));
        }
    }
    Ok(())
}

/// The parents of the FOREIGN KEYs a CREATE / ALTER TABLE defines ([`foreign_key_targets`],
/// read from `text`, the statement as it will be sent) are tables it reads, checked as such
/// through [`table_refs`]: they must be the ones the parse shows, and named unqualified, in the
/// statement's own schema (a qualifier inside a FOREIGN KEY is not rewritten to the dataNode's
/// database, and an unqualified parent is in the child's database, so the child `table` must
/// be unqualified too).
///
/// Errors: 1064 when the text and the parse disagree; 1235 for a qualified parent or a
/// qualified child with a FOREIGN KEY, naming the table.
fn check_foreign_keys(
    statement: &Statement,
    table: &ObjectName,
    text: &str,
) -> Result<(), RouteError> {
    let names = |list: Vec<ObjectName>| list.iter().map(split_name).collect::<Vec<_>>();
    let (Some(sent), Some(parsed)) = (
        foreign_key_targets(text),
        foreign_key_targets(&statement.to_string()),
    ) else {
        return Err(RouteError::syntax(
            "the FOREIGN KEY definitions of the statement cannot be read",
        ));
    };
    let (sent, parsed) = (names(sent), names(parsed));
    if sent != parsed {
        return Err(RouteError::syntax(
            "the gateway does not read the FOREIGN KEY definitions of this statement",
        ));
    }
    for (qualifier, parent) in &sent {
        if let Some(q) = qualifier {
            return Err(RouteError::not_supported(format!(
                "a FOREIGN KEY to `{q}`.`{parent}` is not supported by the gateway: its parent must be a table of the statement's own schema, named unqualified"
            )));
        }
    }
    if !sent.is_empty()
        && let (Some(q), t) = split_name(table)
    {
        return Err(RouteError::not_supported(format!(
            "a FOREIGN KEY on `{q}`.`{t}` is not supported by the gateway: define it in the table's own schema, with the table named unqualified"
        )));
    }
    Ok(())
}

/// The refusal of a statement kind outside the allow-list: 1227 for what manages accounts,
/// databases, the server or stored programs, or runs SQL from a string; 1064 for the rest.
fn refusal(s: &Statement) -> RouteError {
    kind_refusal(&kind_words(s))
}

/// [`refusal`] of a statement kind named by `what` (its first words).
fn kind_refusal(what: &str) -> RouteError {
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
    let upper = what.to_ascii_uppercase();
    if upper
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| PRIVILEGED.contains(&w))
    {
        denied(what)
    } else {
        unsupported(what)
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

/// The refusal of a statement the parser cannot read whose kind the allow-list refuses anyway
/// (module docs), so that the client sees the gateway's own refusal rather than the parser's
/// 1064: `BACKUP STAGE`, `FLUSH` in the forms the parser does not know (`FLUSH TABLE t`),
/// `CHANGE MASTER`, `RENAME DATABASE`, table maintenance forms module `maintenance` does not read (`CHECK TABLE t FOO`,
/// `ALTER TABLE .. ANALYZE PARTITION`), client-issued `XA`, and `SELECT ... INTO OUTFILE |
/// DUMPFILE` with the clauses the parser does not read.
///
/// `text` is the canonical statement (module `lex`). This only ever chooses the wording of a
/// refusal: a statement the parser cannot read is refused whatever this answers (`None`: the
/// parser's own error stands), so nothing here can let a statement through.
///
/// Errors (the value returned): 1227 for what needs a privilege on the server (`BACKUP`,
/// `FLUSH`, replication, databases, files); 1064 naming the statement kind otherwise.
pub fn unread_refusal(text: &str) -> Option<RouteError> {
    let toks = super::rewrite::tokens(text)?;
    // The statement's unquoted words, upper-cased.
    let words: Vec<String> = toks
        .iter()
        .filter_map(|(t, _, _)| match t {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    // Its first three words, when it starts with a word (`(SELECT ...)` does not).
    let lead: Vec<&str> = match toks.first() {
        Some((Token::Word(w), _, _)) if w.quote_style.is_none() => {
            words.iter().take(3).map(String::as_str).collect()
        }
        _ => Vec::new(),
    };
    match lead.as_slice() {
        ["BACKUP", ..] => return Some(denied("BACKUP")),
        ["FLUSH", ..] => return Some(denied("FLUSH")),
        ["CHANGE", "MASTER" | "REPLICATION", ..] => return Some(denied("CHANGE MASTER")),
        ["RENAME", "DATABASE" | "SCHEMA", ..] => return Some(unsupported("RENAME DATABASE")),
        ["ALTER", "DATABASE" | "SCHEMA", ..] => return Some(denied("ALTER DATABASE")),
        // The gateway runs XA itself (README "Atomic multi-node commits"); a client's XA
        // transactions are not forwarded, and XA RECOVER would list the gateway's own.
        ["XA", "RECOVER", ..] => return Some(denied("XA RECOVER")),
        ["XA", ..] => return Some(unsupported("XA")),
        [
            w @ ("GRANT" | "REVOKE" | "PREPARE" | "EXECUTE" | "DEALLOCATE" | "HANDLER" | "INSTALL"
            | "UNINSTALL" | "PURGE" | "SHUTDOWN" | "BINLOG" | "RESET" | "DO"),
            ..,
        ] => return Some(kind_refusal(w)),
        ["LOAD", w @ ("DATA" | "XML" | "INDEX"), ..] => {
            return Some(kind_refusal(&format!("LOAD {w}")));
        }
        ["BEGIN", "NOT", "ATOMIC"] | ["FOR", ..] | ["WHILE" | "LOOP" | "REPEAT" | "IF", ..] => {
            return Some(unsupported("a compound statement"));
        }
        [
            w @ ("CHECK" | "REPAIR" | "OPTIMIZE" | "ANALYZE" | "CHECKSUM"),
            "TABLE" | "TABLES",
            ..,
        ]
        | [
            w @ ("REPAIR" | "OPTIMIZE" | "ANALYZE"),
            "NO_WRITE_TO_BINLOG" | "LOCAL",
            "TABLE" | "TABLES",
        ] => return Some(unsupported(&format!("{w} TABLE"))),
        [verb @ ("CREATE" | "ALTER" | "DROP"), ..] if object_kind(&toks).is_some() => {
            let object = object_kind(&toks).unwrap_or_default();
            return Some(kind_refusal(&format!("{verb} {object}")));
        }
        ["ALTER", ..] => {
            // `ALTER [ONLINE] [IGNORE] TABLE t ... ANALYZE | CHECK | OPTIMIZE | REPAIR
            // PARTITION`: table maintenance, refused as `ANALYZE TABLE` is.
            let is_table = words.iter().take(4).any(|w| w == "TABLE");
            if is_table
                && let Some(pair) = words.windows(2).find(|p| {
                    matches!(p[0].as_str(), "ANALYZE" | "CHECK" | "OPTIMIZE" | "REPAIR")
                        && p[1] == "PARTITION"
                })
            {
                return Some(unsupported(&format!(
                    "ALTER TABLE ... {} PARTITION",
                    pair[0]
                )));
            }
        }
        _ => {}
    }
    // `SELECT ... INTO OUTFILE | DUMPFILE` (with `FIELDS` / `LINES` clauses or `CHARACTER SET`,
    // which the parser does not read): files on the backend's host.
    let query = matches!(lead.first(), Some(&("SELECT" | "WITH" | "VALUES")))
        || matches!(toks.first(), Some((Token::LParen, _, _)));
    if query
        && words
            .windows(2)
            .any(|p| p[0] == "INTO" && matches!(p[1].as_str(), "OUTFILE" | "DUMPFILE"))
    {
        return Some(denied("SELECT ... INTO (or TABLE)"));
    }
    None
}

/// The kind of object a CREATE / ALTER / DROP the parser cannot read names, when it is one the
/// allow-list refuses (`PROCEDURE`, `VIEW`, `DATABASE`, ...): the first such word among the
/// statement's leading unquoted words that is not a value (after `=`), before any `TABLE`,
/// `INDEX` or `SEQUENCE` (whose statements are table DDL).
fn object_kind(toks: &[(Token, std::ops::Range<usize>, usize)]) -> Option<&'static str> {
    const REFUSED: &[&str] = &[
        "PROCEDURE",
        "FUNCTION",
        "TRIGGER",
        "EVENT",
        "VIEW",
        "USER",
        "ROLE",
        "SERVER",
        "DATABASE",
        "SCHEMA",
        "PACKAGE",
        "TABLESPACE",
        "LOGFILE",
    ];
    let mut after_eq = false;
    for (t, _, _) in toks.iter().skip(1).take(12) {
        match t {
            Token::Word(w) if w.quote_style.is_none() && !after_eq => {
                let upper = w.value.to_ascii_uppercase();
                if matches!(upper.as_str(), "TABLE" | "INDEX" | "SEQUENCE") {
                    return None;
                }
                if let Some(k) = REFUSED.iter().find(|k| **k == upper) {
                    return Some(k);
                }
            }
            _ => {}
        }
        after_eq = matches!(t, Token::Eq);
    }
    None
}

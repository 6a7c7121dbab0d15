//! MariaDB sequences (issue 18): `CREATE [OR REPLACE] [TEMPORARY] SEQUENCE`, `ALTER SEQUENCE`,
//! `DROP [TEMPORARY] SEQUENCE`, and the sequence functions `NEXTVAL(s)` / `NEXT VALUE FOR s`,
//! `LASTVAL(s)` / `PREVIOUS VALUE FOR s`, `SETVAL(s, n[, used[, round]])` inside admitted
//! statements (module `admit` reads them; `forms` reads the `... VALUE FOR` spellings).
//!
//! A sequence is a table to MariaDB, and to the gateway: its name is resolved like a table's
//! (a qualifier must be a logical schema the user may use, replaced by the dataNode's
//! database), checked against the user's `<privileges>` with the access MariaDB asks of it
//! (DDL for CREATE / ALTER / DROP; INSERT and SELECT for NEXTVAL, INSERT for SETVAL, SELECT for
//! LASTVAL), and placed like an undeclared table: on the schema's default dataNode (or the one
//! dataNode of a schema.xml table of that name). A schema without a default dataNode has no
//! place for one, and the statement is refused naming the sequence.
//!
//! A statement naming a sequence runs only where the sequence is: its plan must be that one
//! dataNode (a sharded INSERT whose row lands there runs; one whose row lands elsewhere, or
//! that reaches several dataNodes, is refused naming the sequence and the nodes). Such plans
//! go to the writeHost, and are never cached by shape (module `shape`): their placement
//! depends on the sequence too.
//!
//! Mycat's global sequences (`NEXT VALUE FOR MYCATSEQ_xxx`) never get here: the gateway draws
//! them itself before any parse (module `insert`, `sequence_calls`).

use super::*;
use crate::route::Refusal;

/// A sequence a statement names in a sequence function.
#[derive(Debug, Clone)]
pub(super) struct Named {
    /// Upper-cased name, unqualified (the qualifier decided the statement's schema).
    pub name: String,
    /// NEXTVAL / SETVAL: the call changes the sequence.
    pub writes: bool,
}

/// Where the sequences of a statement are: one dataNode.
#[derive(Debug, Clone)]
pub(super) struct Placement {
    pub node: String,
    /// The first sequence's name, for messages.
    pub sequence: String,
    /// Some call changes a sequence (the plan is a write).
    pub writes: bool,
}

/// Whether `stmt` may call a sequence function (a cheap test on the text, erring towards yes:
/// `NEXT` covers NEXTVAL and NEXT VALUE FOR, `PREVIOUS` PREVIOUS VALUE FOR; never the
/// `VALUES` of every INSERT).
pub(super) fn may_name_sequence(stmt: &str) -> bool {
    ["NEXT", "PREVIOUS", "LASTVAL", "SETVAL"]
        .iter()
        .any(|w| scan::contains_ignore_ascii_case(stmt, w))
}

/// The dataNode holding sequence `name` of schema `s`: the one dataNode of a schema.xml table
/// of that name, else the schema's default dataNode.
///
/// Errors (1064, naming the sequence): a table of that name on several dataNodes; a schema
/// without a default dataNode; a PostgreSQL dataNode (MariaDB sequences only).
fn place(r: &Router, s: &SchemaRoute, name: &str) -> Result<String, RouteError> {
    let node = match (s.tables.get(&name.to_ascii_uppercase()), &s.default_node) {
        (Some(t), _) if t.nodes.len() == 1 => t.nodes[0].clone(),
        (Some(t), _) => {
            return Err(RouteError::syntax(format!(
                "sequence {name}: schema {} declares {name} as a table on {} dataNodes, and a sequence lives on one",
                s.name,
                t.nodes.len()
            )));
        }
        (None, Some(d)) => d.clone(),
        (None, None) => {
            return Err(RouteError::syntax(format!(
                "sequence {name} cannot be placed: schema {} has no default dataNode (MariaDB sequences live on a schema's default dataNode)",
                s.name
            )));
        }
    };
    if !r.is_mysql_node(&node) {
        return Err(RouteError::syntax(format!(
            "sequence {name}: dataNode {node} of schema {} is not MySQL/MariaDB",
            s.name
        )));
    }
    Ok(node)
}

/// The one dataNode of the sequences `named` in a statement routed in schema `s`; `None`
/// without any.
///
/// Errors: as [`place`]; 1064 for sequences on different dataNodes.
pub(super) fn node_of_sequences(
    r: &Router,
    s: &SchemaRoute,
    named: &[Named],
) -> Result<Option<Placement>, RouteError> {
    let mut found: Option<Placement> = None;
    for n in named {
        let node = place(r, s, &n.name)?;
        match &mut found {
            Some(p) if p.node != node => {
                return Err(RouteError::syntax(format!(
                    "sequences {} and {} are on different dataNodes ({} and {node})",
                    p.sequence, n.name, p.node
                )));
            }
            Some(p) => p.writes |= n.writes,
            None => {
                found = Some(Placement {
                    node,
                    sequence: n.name.clone(),
                    writes: n.writes,
                })
            }
        }
    }
    Ok(found)
}

/// Keeps `routed` on the sequences' dataNode: a plan of that one node (a read that any node
/// answers is sent to it), to the writeHost, a write when a call changes a sequence. An
/// INSERT waiting for its column order is checked when routed again.
///
/// Errors: 1064 naming the sequence and the nodes the statement would reach.
pub(super) fn keep_on_node(routed: &mut Routed, at: &Placement) -> Result<(), RouteError> {
    let refuse = |nodes: String| {
        RouteError::syntax(format!(
            "sequence {} is on dataNode {}, and this statement runs on {nodes}: a statement using a sequence must run on the sequence's dataNode alone",
            at.sequence, at.node
        ))
    };
    let p = match routed {
        Routed::Plan(p) => p,
        Routed::Columns(_) => return Ok(()),
        Routed::Lookup(_) => return Err(refuse("a dataNode found from data".to_string())),
        _ => return Err(refuse("no dataNode".to_string())),
    };
    if p.targets.len() == 1
        && p.targets[0].node != at.node
        && p.merge.is_none()
        && let Some(i) = p.fallback.iter().position(|t| t.node == at.node)
    {
        std::mem::swap(&mut p.targets[0], &mut p.fallback[i]);
    }
    if p.targets.len() != 1 || p.targets[0].node != at.node {
        let nodes: Vec<&str> = p.targets.iter().map(|t| t.node.as_str()).collect();
        return Err(refuse(nodes.join(", ")));
    }
    p.fallback.retain(|t| t.node == at.node);
    if at.writes {
        p.read_only = false;
    }
    if p.host == HostHint::None {
        p.host = HostHint::Master;
    }
    Ok(())
}

/// Whether `stmt` (canonical) is `CREATE [OR REPLACE] [TEMPORARY] SEQUENCE`, `ALTER SEQUENCE`
/// or `DROP [TEMPORARY] SEQUENCE`.
pub(super) fn is_sequence_ddl(stmt: &str) -> bool {
    if !scan::contains_ignore_ascii_case(stmt, "SEQUENCE") {
        return false;
    }
    let Some(toks) = rewrite::tokens(stmt) else {
        return false;
    };
    let r = Reader { toks: &toks, at: 0 };
    r.head().is_some()
}

/// What a sequence DDL statement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Create,
    Alter,
    Drop,
}

/// A reader over a statement's significant tokens.
struct Reader<'t> {
    toks: &'t [(Token, std::ops::Range<usize>, usize)],
    at: usize,
}

impl Reader<'_> {
    fn word(&self, k: usize) -> Option<String> {
        match self.toks.get(k).map(|t| &t.0) {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    fn is(&self, k: usize, w: &str) -> bool {
        self.word(k).as_deref() == Some(w)
    }

    /// The statement's kind and where its name starts, past `IF [NOT] EXISTS`; with whether
    /// it has `IF`.
    fn head(&self) -> Option<(Kind, usize)> {
        let mut k = 1;
        let kind = match self.word(0)?.as_str() {
            "CREATE" => {
                if self.is(k, "OR") && self.is(k + 1, "REPLACE") {
                    k += 2;
                }
                if self.is(k, "TEMPORARY") {
                    k += 1;
                }
                Kind::Create
            }
            "ALTER" => Kind::Alter,
            "DROP" => {
                if self.is(k, "TEMPORARY") {
                    k += 1;
                }
                Kind::Drop
            }
            _ => return None,
        };
        if !self.is(k, "SEQUENCE") {
            return None;
        }
        k += 1;
        if kind == Kind::Create
            && self.is(k, "IF")
            && self.is(k + 1, "NOT")
            && self.is(k + 2, "EXISTS")
        {
            k += 3;
        } else if kind != Kind::Create && self.is(k, "IF") && self.is(k + 1, "EXISTS") {
            k += 2;
        }
        Some((kind, k))
    }

    fn eat(&mut self, w: &str) -> bool {
        if self.is(self.at, w) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_eq(&mut self) -> bool {
        if matches!(self.toks.get(self.at).map(|t| &t.0), Some(Token::Eq)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// A name, `s` or `db.s` (quoted or not): `(qualifier and its text range, name)`.
    #[allow(clippy::type_complexity)]
    fn name(&mut self) -> Option<(Option<(String, std::ops::Range<usize>)>, String)> {
        let ident = |t: Option<&(Token, std::ops::Range<usize>, usize)>| match t.map(|t| &t.0) {
            Some(Token::Word(w)) => Some(w.value.clone()),
            _ => None,
        };
        let first = ident(self.toks.get(self.at))?;
        if matches!(
            self.toks.get(self.at + 1).map(|t| &t.0),
            Some(Token::Period)
        ) {
            let second = ident(self.toks.get(self.at + 2))?;
            let range = self.toks[self.at].1.clone();
            self.at += 3;
            Some((Some((first, range)), second))
        } else {
            self.at += 1;
            Some((None, first))
        }
    }

    /// A signed integer.
    fn number(&mut self) -> bool {
        if matches!(
            self.toks.get(self.at).map(|t| &t.0),
            Some(Token::Minus | Token::Plus)
        ) {
            self.at += 1;
        }
        match self.toks.get(self.at).map(|t| &t.0) {
            Some(Token::Number(n, _)) if n.bytes().all(|b| b.is_ascii_digit()) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// The options of CREATE / ALTER SEQUENCE to the end (MariaDB 10.11's `sequence_defs` and,
    /// for CREATE, the table options `ENGINE` (a local engine) and `COMMENT`).
    ///
    /// Errors: the first word that is none of them, or a value of the wrong kind.
    fn options(&mut self, kind: Kind) -> Result<(), String> {
        while self.at < self.toks.len() {
            let Some(w) = self.word(self.at) else {
                return Err(format!("{:?}", self.toks[self.at].0));
            };
            self.at += 1;
            let ok = match w.as_str() {
                "INCREMENT" => {
                    let _ = self.eat("BY") || self.eat_eq();
                    self.number()
                }
                "MINVALUE" | "MAXVALUE" | "CACHE" => {
                    self.eat_eq();
                    self.number()
                }
                "START" => {
                    let _ = self.eat("WITH") || self.eat_eq();
                    self.number()
                }
                "RESTART" if kind == Kind::Alter => {
                    if self.eat("WITH") || self.eat_eq() {
                        self.number()
                    } else {
                        let _ = self.number();
                        true
                    }
                }
                "NO" => {
                    self.eat("MINVALUE")
                        || self.eat("MAXVALUE")
                        || self.eat("CYCLE")
                        || self.eat("CACHE")
                }
                "NOMINVALUE" | "NOMAXVALUE" | "NOCACHE" | "CYCLE" | "NOCYCLE" => true,
                "ENGINE" if kind == Kind::Create => {
                    self.eat_eq();
                    let engine = match self.toks.get(self.at).map(|t| &t.0) {
                        Some(Token::Word(e)) => Some(e.value.to_ascii_uppercase()),
                        Some(Token::SingleQuotedString(e)) => Some(e.to_ascii_uppercase()),
                        _ => None,
                    };
                    self.at += 1;
                    match engine {
                        Some(e) if crate::route::admit::LOCAL_ENGINES.contains(&e.as_str()) => true,
                        Some(e) => return Err(format!("ENGINE {e}")),
                        None => false,
                    }
                }
                "COMMENT" if kind == Kind::Create => {
                    self.eat_eq();
                    let string = matches!(
                        self.toks.get(self.at).map(|t| &t.0),
                        Some(Token::SingleQuotedString(_))
                    );
                    self.at += 1;
                    string
                }
                _ => false,
            };
            if !ok {
                return Err(w);
            }
            if matches!(self.toks.get(self.at).map(|t| &t.0), Some(Token::Comma)) {
                self.at += 1;
            }
        }
        Ok(())
    }
}

/// CREATE / ALTER / DROP SEQUENCE: each sequence resolved and access-checked as a table (DDL),
/// all on one dataNode, the statement sent there with the logical qualifiers replaced by its
/// database.
///
/// Errors: 1064 for a form the gateway does not read (naming the word) or sequences on
/// several dataNodes; 1044 / 1049 for a qualifier that is no logical schema the user may use;
/// 1046 without a schema; 1227 for an engine outside the local ones; the access errors of
/// [`super::super::Access::check_table`]; the placement errors of [`place`].
pub(super) fn sequence_ddl(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let toks = rewrite::tokens(stmt)
        .ok_or_else(|| RouteError::syntax("the statement cannot be tokenized"))?;
    let mut reader = Reader { toks: &toks, at: 0 };
    let (kind, start) = reader
        .head()
        .ok_or_else(|| RouteError::syntax("not a sequence statement"))?;
    reader.at = start;
    let what = match kind {
        Kind::Create => "CREATE SEQUENCE",
        Kind::Alter => "ALTER SEQUENCE",
        Kind::Drop => "DROP SEQUENCE",
    };
    let mut names = Vec::new();
    loop {
        let name = reader
            .name()
            .ok_or_else(|| RouteError::syntax(format!("{what} needs a sequence name")))?;
        names.push(name);
        if kind == Kind::Drop && matches!(toks.get(reader.at).map(|t| &t.0), Some(Token::Comma)) {
            reader.at += 1;
            continue;
        }
        break;
    }
    match kind {
        Kind::Drop if reader.at < toks.len() => {
            return Err(RouteError::syntax(format!(
                "{what} takes only sequence names here"
            )));
        }
        Kind::Drop => {}
        _ => reader.options(kind).map_err(|w| {
            if let Some(engine) = w.strip_prefix("ENGINE ") {
                RouteError::new(Refusal::PrivilegeRequired, format!(
                        "Access denied; the storage engine {engine} is not available through the gateway"
                    ))
            } else {
                RouteError::syntax(format!("{what}: the option {w} is not read by the gateway"))
            }
        })?,
    }
    let mut node: Option<(String, String)> = None;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (qualifier, name) in &names {
        let schema = match qualifier {
            Some((q, _)) if r.schema(q).is_none() => {
                if SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(q)) {
                    return Err(RouteError::new(
                        Refusal::DatabaseAccessDenied,
                        format!(
                            "Access denied to database '{q}': the backend servers' own schemas are not reachable through the gateway"
                        ),
                    ));
                }
                return Err(RouteError::unknown_database(q));
            }
            Some((q, _)) => Some(q.as_str()),
            None => view.schema,
        };
        let s = require_schema(r, schema, view)?;
        if let Some(access) = view.access {
            access.check_table(&s.name, name, super::super::TableAccess::Ddl)?;
        }
        let at = place(r, s, name)?;
        match &node {
            Some((n, first)) if *n != at => {
                return Err(RouteError::syntax(format!(
                    "sequences {first} and {name} are on different dataNodes ({n} and {at}): drop them one at a time"
                )));
            }
            Some(_) => {}
            None => node = Some((at.clone(), name.clone())),
        }
        if let Some((_, range)) = qualifier {
            let database = r.database_of(&at).unwrap_or(&at);
            edits.push((range.clone(), format!("`{}`", database.replace('`', "``"))));
        }
    }
    let (node, _) = node.ok_or_else(|| RouteError::syntax(format!("{what} needs a name")))?;
    let mut sql = stmt.to_string();
    for (range, text) in edits.into_iter().rev() {
        sql.replace_range(range, &text);
    }
    match single(node, sql, false) {
        Routed::Plan(mut p) => {
            p.ddl = true;
            Ok(Routed::Plan(p))
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_may_use_a_sequence_are_told_from_plain_inserts() {
        for sql in [
            "SELECT NEXTVAL(s)",
            "INSERT INTO t VALUES (next value for s)",
            "SELECT PREVIOUS VALUE FOR s",
            "SELECT lastval(s)",
            "SELECT setval(s, 1)",
        ] {
            assert!(may_name_sequence(sql), "{sql}");
        }
        assert!(!may_name_sequence("INSERT INTO t (a) VALUES (1)"));
    }

    fn head(sql: &str) -> Option<Kind> {
        let toks = rewrite::tokens(sql).unwrap();
        Reader { toks: &toks, at: 0 }.head().map(|(k, _)| k)
    }

    fn options(sql: &str) -> Result<(), String> {
        let toks = rewrite::tokens(sql).unwrap();
        let mut r = Reader { toks: &toks, at: 0 };
        let (kind, at) = r.head().unwrap();
        r.at = at;
        r.name().unwrap();
        r.options(kind)
    }

    #[test]
    fn sequence_statements_are_told_apart() {
        assert_eq!(head("CREATE SEQUENCE s"), Some(Kind::Create));
        assert_eq!(
            head("create or replace temporary sequence if not exists d.s"),
            Some(Kind::Create)
        );
        assert_eq!(
            head("ALTER SEQUENCE IF EXISTS s RESTART"),
            Some(Kind::Alter)
        );
        assert_eq!(
            head("DROP TEMPORARY SEQUENCE IF EXISTS s, t"),
            Some(Kind::Drop)
        );
        assert_eq!(head("CREATE TABLE sequence (a INT)"), None);
        assert_eq!(head("DROP TABLE `SEQUENCE`"), None);
    }

    #[test]
    fn options_of_mariadb_are_read_and_nothing_else() {
        for sql in [
            "CREATE SEQUENCE s",
            "CREATE SEQUENCE s START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 100 CACHE 10 CYCLE",
            "CREATE SEQUENCE s start = -5 increment = -1 minvalue = -100 maxvalue = 0 nocache nocycle",
            "CREATE SEQUENCE s NO MINVALUE NO MAXVALUE NOMINVALUE NOMAXVALUE ENGINE=InnoDB COMMENT 'x'",
            "CREATE SEQUENCE s INCREMENT 2 ENGINE = 'Aria'",
            "ALTER SEQUENCE s RESTART",
            "ALTER SEQUENCE s RESTART WITH 50 INCREMENT BY 5",
            "ALTER SEQUENCE s RESTART 50",
        ] {
            assert_eq!(options(sql), Ok(()), "{sql}");
        }
        for sql in [
            "CREATE SEQUENCE s ENGINE=CONNECT",
            "CREATE SEQUENCE s DATA DIRECTORY='/tmp'",
            "CREATE SEQUENCE s START WITH (SELECT 1)",
            "CREATE SEQUENCE s START WITH 1.5",
            "CREATE SEQUENCE s LIKE t",
            "ALTER SEQUENCE s ENGINE=InnoDB",
            "CREATE SEQUENCE s CONNECTION='mysql://x'",
        ] {
            assert!(options(sql).is_err(), "{sql}");
        }
    }
}

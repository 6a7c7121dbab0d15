//! Mycat annotations (`/*!mycat:...*/` hints): where an annotated statement goes, and the checks it passes first.

use super::*;

/// A statement behind a Mycat annotation (SPEC §6; DECISIONS.md items 11-13):
/// * `db_type=master|slave`: the statement is routed as usual, then served by the active
///   writeHost or a readHost;
/// * `dataNode=dn`: the statement goes unchanged to `dn`, which must be a dataNode of the current
///   schema (Mycat accepts any configured node; manx keeps users inside the schemas they may use);
/// * `sql=<statement>`: the statement goes unchanged to the nodes `<statement>` routes to. Unlike
///   Mycat, the real statement's own kind decides read or write: a write is never sent to a
///   readHost because the routing statement was a SELECT.
///
/// Statements sent unchanged still pass the gateway's reachability checks (no other physical
/// database, no backend schema, no file access), must parse, and must be a query, INSERT,
/// UPDATE, DELETE, table DDL or CALL (`SHOW`/`DESC` are checked by routing them as usual).
///
/// Errors: 1064 naming the hint for unknown or unsupported types (`schema`, `catlet`), unknown
/// values and nodes, and whatever routing the statement gives.
pub(super) fn annotated(
    r: &Router,
    a: scan::Annotation<'_>,
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let schema = view.schema;
    match a.kind.as_str() {
        "db_type" => {
            let host = if a.value.eq_ignore_ascii_case("master") {
                HostHint::Master
            } else if a.value.eq_ignore_ascii_case("slave") {
                HostHint::Slave
            } else {
                return Err(RouteError::syntax(format!(
                    "db_type must be master or slave: {}",
                    a.text
                )));
            };
            Ok(with_host(route(r, a.statement, view, None)?, host))
        }
        "datanode" => {
            let s = require_schema(r, schema, view)?;
            if !s.nodes.iter().any(|n| n == a.value) {
                return Err(RouteError::syntax(format!(
                    "can't find hint datanode:{} in schema {}",
                    a.value, s.name
                )));
            }
            verbatim(r, a.statement, view, vec![a.value.to_string()], true)
        }
        "sql" => {
            let Routed::Plan(by) = route(r, a.value, view, None)? else {
                return Err(RouteError::syntax(format!(
                    "the statement of {} does not route to a fixed set of dataNodes",
                    a.text
                )));
            };
            let nodes = by.targets.into_iter().map(|t| t.node).collect();
            verbatim(r, a.statement, view, nodes, by.read_only)
        }
        "schema" | "catlet" => Err(RouteError::syntax(format!(
            "Mycat annotation type {} is not supported: {}",
            a.kind, a.text
        ))),
        other => Err(RouteError::syntax(format!(
            "unknown Mycat annotation type '{other}': {}",
            a.text
        ))),
    }
}

/// Sets the server a hint asked for on a routed statement.
pub(super) fn with_host(routed: Routed, host: HostHint) -> Routed {
    match routed {
        Routed::Plan(mut p) => {
            p.host = host;
            Routed::Plan(p)
        }
        Routed::Sequence(mut s) => {
            if host == HostHint::Master {
                s.prefix = format!("/*balance*/{}", s.prefix);
            }
            Routed::Sequence(s)
        }
        // EXPLAIN shows the route; the hint changes only the server.
        Routed::Local(Local::Explain(mut p)) => {
            p.host = host;
            Routed::Local(Local::Explain(p))
        }
        Routed::Local(Local::ExplainTree(mut p)) => {
            p.host = host;
            Routed::Local(Local::ExplainTree(p))
        }
        local => local,
    }
}

/// A plan that sends `sql` unchanged (in its canonical form, module `lex`) to each of
/// `nodes`, after the checks every statement passes: the allow-list (module `admit`), the
/// reachability of schemas and the user's access to every table it names. It is a read only
/// when `may_read` and the statement itself only reads.
pub(super) fn verbatim(
    r: &Router,
    sql: &str,
    view: &SessionView<'_>,
    nodes: Vec<String>,
    may_read: bool,
) -> Result<Routed, RouteError> {
    let canonical = lex::canonical(sql, view.mode)?;
    let stmt = scan::strip(&canonical.text);
    if stmt.is_empty() {
        return Err(RouteError::empty());
    }
    if lex::canonical(stmt, view.mode)?.separator {
        return Err(RouteError::syntax(
            "Multi statements is not supported, use single statement instead",
        ));
    }
    let first = scan::first_word_before_comment(stmt).unwrap_or_default();
    let (read, ddl) = match first.as_str() {
        // Session and transaction state is the gateway's: sending it to one backend connection
        // would desynchronise them.
        "SET" | "USE" | "BEGIN" | "START" | "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE"
        | "LOCK" | "UNLOCK" | "XA" => {
            return Err(RouteError::syntax(format!(
                "{first} cannot be sent through an annotation: the gateway keeps session and transaction state itself"
            )));
        }
        // SHOW and DESC: answered as without the annotation. Sent to the annotated node they
        // would show what that node's database holds beyond the schema's tables.
        "SHOW" | "DESC" | "DESCRIBE" => return route(r, stmt, view, None),
        _ => {
            let mut parsed = super::super::forms::parse(stmt).map_err(|e| {
                admit::unread_refusal(stmt).unwrap_or_else(|| RouteError::parser(e))
            })?;
            if parsed.len() != 1 {
                return Err(RouteError::syntax(
                    "Multi statements is not supported, use single statement instead",
                ));
            }
            let statement = parsed.remove(0);
            let is_schema = |n: &str| r.schemas.contains_key(n);
            let kind = admit::admit(&statement, stmt, &is_schema, &|n| r.knows_function(n))?;
            let c = collect(&is_schema, &statement);
            check_reachable(&statement, &c)?;
            let schema = require_schema(r, view.schema, view)?;
            check_access(view, &schema.name, &statement, &c.qualifiers)?;
            check_annotated_tables(schema, &statement, &nodes)?;
            (kind == Admitted::Query, kind == Admitted::Ddl)
        }
    };
    let sql: Arc<str> = Arc::from(stmt);
    Ok(Routed::Plan(Plan {
        tables: Default::default(),
        targets: nodes
            .into_iter()
            .map(|node| Target {
                node,
                sql: sql.clone(),
            })
            .collect(),
        read_only: may_read && read,
        ok_merge: OkMerge::Sum,
        merge: None,
        fallback: Vec::new(),
        ddl,
        host: HostHint::None,
        server_variables: false,
        table_names: None,
    }))
}

/// The tables of a statement an annotation sends unchanged to `nodes`: each must be a table
/// of schema `s` that lives on every one of those nodes, or, in a schema with a default
/// dataNode, any other table when the nodes are that default node alone. Named unqualified:
/// the text reaches the backend as written, where a qualifier names a physical database.
/// Mycat forwards annotated statements as they are; manx keeps them inside the schema.
///
/// Errors: 1064 naming the table (and the node it is not on).
pub(super) fn check_annotated_tables(
    s: &SchemaRoute,
    statement: &Statement,
    nodes: &[String],
) -> Result<(), RouteError> {
    for t in admit::table_refs(statement) {
        if let Some(q) = &t.qualifier {
            return Err(RouteError::syntax(format!(
                "write table {q}.{} unqualified in an annotated statement: it is sent to the dataNode as written",
                t.table
            )));
        }
        match s.tables.get(&t.table.to_ascii_uppercase()) {
            Some(table) => {
                if let Some(n) = nodes.iter().find(|n| !table.nodes.contains(n)) {
                    return Err(RouteError::syntax(format!(
                        "table {} of schema {} is not on dataNode {n}",
                        t.table, s.name
                    )));
                }
            }
            None => match &s.default_node {
                Some(d) if nodes.iter().all(|n| n == d) => {}
                Some(d) => {
                    return Err(RouteError::syntax(format!(
                        "table {} is not defined in schema {}: it is only reachable on its default dataNode {d}",
                        t.table, s.name
                    )));
                }
                None => return Err(unknown_table(&t.table, &s.name)),
            },
        }
    }
    Ok(())
}

//! Statements that go through the SQL parser: the plan cache in front, then parse, admit,
//! collect, check access and route.

use super::*;

/// Where a statement calls something the gateway answers as a literal (byte ranges), and the
/// literal's text.
type Found<'a> = (Vec<Range<usize>>, &'a dyn Fn() -> String);

/// Statements that go through the SQL parser.
/// [`parsed`] through the session's plan cache (module `shape`).
///
/// The cache is the session's own, so a shape it holds was admitted and access-checked for this
/// user by [`parsed`]: a statement of the same shape names the same tables the same way.
pub(super) fn cached(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    cache: &mut PlanCache,
) -> Result<Routed, RouteError> {
    let Some(schema) = view.schema else {
        return parsed(r, stmt, view, &mut CacheHints::default());
    };
    // `@@character_set_client` is written as the session's value: not a plan to keep. Nor
    // is a statement that reads the session's counters, written as their values now.
    if (view.charsets.is_some() && stmt.contains("@@"))
        || (view.counters.is_some() && rewrite::mentions_counters(stmt))
    {
        return parsed(r, stmt, view, &mut CacheHints::default());
    }
    let (Some((key, literals)), Some(s)) =
        (shape::key_and_literals(schema, stmt), r.schema(schema))
    else {
        return parsed(r, stmt, view, &mut CacheHints::default());
    };
    if let Some(plan) = cache.get(&key, &literals, stmt, s) {
        cache.set_last_key(key);
        return Ok(Routed::Plan(plan));
    }
    cache.set_last_key(key.clone());
    let mut hints = CacheHints::default();
    let routed = parsed(r, stmt, view, &mut hints)?;
    let literal_free = hints.literal_free;
    // A statement naming a sequence is placed by the sequence's node too (module
    // `sequence`), which the cache's learned placements do not know: never cached.
    // A plan read from the tables' columns holds until a DDL has them read again.
    if let Routed::Plan(plan) = &routed
        && plan.fallback.is_empty()
        && !hints.columns_used
        && !sequence::may_name_sequence(stmt)
    {
        // One node, the statement as written, no merge.
        let plain =
            plan.targets.len() == 1 && *plan.targets[0].sql == *stmt && plan.merge.is_none();
        if plain && literal_free {
            cache.insert(key, plan.clone());
        } else if !literal_free && literals.len() == 2 {
            cache.learn_range(key, &literals, stmt, s, plan);
        } else if plain {
            cache.learn_point(key, &literals, stmt, s, plan);
        }
    }
    Ok(routed)
}

/// What routing a statement tells the plan cache about its plan.
#[derive(Debug, Default)]
pub(super) struct CacheHints {
    /// The plan cannot depend on the statement's literals: a SELECT whose first table is
    /// undeclared in a schema with a default dataNode (SPEC §5.4: the whole statement goes
    /// there).
    pub(super) literal_free: bool,
    /// The plan depends on tables' columns the session read ([`super::super::ColumnOrders`]),
    /// which a DDL has read again: not kept.
    pub(super) columns_used: bool,
}

/// Parses and routes `stmt`, with what the plan cache may do with the plan in `hints`.
pub(super) fn parsed(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    hints: &mut CacheHints,
) -> Result<Routed, RouteError> {
    let mut tables = Vec::new();
    let mut routed = parsed_statement(r, stmt, view, hints, &mut tables)?;
    if let Routed::Plan(plan) = &mut routed {
        plan.tables = Arc::from(tables);
    }
    Ok(routed)
}

/// [`parsed`], with the logical tables the statement names put in `tables` (upper-cased, in
/// order, once each; not information_schema, WITH query names or DUAL).
fn parsed_statement(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    hints: &mut CacheHints,
    tables: &mut Vec<String>,
) -> Result<Routed, RouteError> {
    let schema = view.schema;
    let mut statements = crate::route::forms::parse(stmt)
        .map_err(|e| admit::unread_refusal(stmt).unwrap_or_else(|| RouteError::parser(e)))?;
    if statements.len() != 1 {
        return Err(RouteError::syntax(
            "Multi statements is not supported, use single statement instead",
        ));
    }
    let statement = statements.remove(0);
    let is_schema = |n: &str| r.schemas.contains_key(n);
    admit::admit(&statement, stmt, &is_schema, &|n| r.knows_function(n))?;
    let c = collect(&is_schema, &statement);
    for o in &c.occurrences {
        let named = match o.qualifier.as_deref() {
            Some(q) => !metadata::is_information_schema(q),
            None => !(c.ctes.contains(&o.name) || o.name == "DUAL"),
        };
        if named && !tables.contains(&o.name) {
            tables.push(o.name.clone());
        }
    }
    // Routing drops every name of a WITH query and every DUAL from the tables it places; the
    // access checks resolve names as MariaDB does (`admit::table_refs`). Where the two could
    // differ — a table named like a WITH query of the statement, a backquoted `dual` (a real
    // table to MariaDB) — the statement is refused, so both always see the same tables.
    if let Some(t) = admit::table_refs(&statement).iter().find(|t| {
        t.qualifier.is_none()
            && (c.ctes.contains(&t.table.to_ascii_uppercase())
                || t.table.eq_ignore_ascii_case("DUAL"))
    }) {
        return Err(RouteError::syntax(format!(
            "table {} is not supported here: it is named like a WITH query of the statement, or is `dual` (rename it)",
            t.table
        )));
    }
    check_reachable(&statement, &c)?;
    if let Some(access) = view.access {
        for q in &c.qualifiers {
            access.check_schema(q)?;
        }
    }
    if matches!(statement, Statement::Query(_))
        && c.occurrences.iter().any(|o| {
            o.qualifier
                .as_deref()
                .is_some_and(metadata::is_information_schema)
        })
    {
        // Tools' metadata queries: answered for the logical schemas (module `metadata`).
        if let Some(seq) = c.sequences.first() {
            return Err(RouteError::not_supported(format!(
                "sequence {} in a query of information_schema is not supported",
                seq.name
            )));
        }
        let others: Vec<String> = c
            .occurrences
            .iter()
            .filter(|o| match o.qualifier.as_deref() {
                Some(q) => !metadata::is_information_schema(q),
                None => !(c.ctes.contains(&o.name) || o.name == "DUAL"),
            })
            .map(|o| o.name.clone())
            .collect();
        if let Some(current) = schema {
            check_access(view, current, &statement, &c.qualifiers)?;
        } else if let Some(access) = view.access
            && let Some(t) = admit::table_refs(&statement)
                .into_iter()
                .find(|t| t.qualifier.is_none())
        {
            // A table without a schema, in a session without one.
            access.check_schema("")?;
            return Err(unknown_table(&t.table, ""));
        }
        let q = metadata::analyze(stmt, &statement, &others, schema)?;
        return Ok(Routed::Metadata(q));
    }
    // Names written as `schema.table` where schema is configured decide the schema when the
    // session has none, and when every table the statement names is qualified with the same
    // other logical schema (`CREATE TABLE test_schema.t ..` from schema `test`: routed by
    // test_schema's rules, as after `USE test_schema`); a statement mixing the session's
    // tables with another schema's is not supported yet.
    let only_other = match (schema, c.qualifiers.iter().collect::<Vec<_>>().as_slice()) {
        (Some(s), [q]) if *q != s => {
            let relations = c
                .occurrences
                .iter()
                .filter(|o| {
                    o.qualifier.is_some() || !(c.ctes.contains(&o.name) || o.name == "DUAL")
                })
                .filter(|o| {
                    !o.qualifier.as_deref().is_some_and(|q| {
                        metadata::is_information_schema(q)
                            || SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(q))
                    })
                })
                .all(|o| o.qualifier.as_deref() == Some(q.as_str()));
            // The targets too (INSERT INTO t, CREATE TABLE t, which are no relations of the
            // query): `INSERT INTO t VALUES (NEXTVAL(other.s))` writes the session's `t`.
            let targets = || {
                admit::table_refs(&statement).iter().all(|t| {
                    t.qualifier.as_deref().is_some_and(|x| {
                        x == q.as_str()
                            || metadata::is_information_schema(x)
                            || SYSTEM_SCHEMAS.iter().any(|y| y.eq_ignore_ascii_case(x))
                    })
                })
            };
            (relations && targets()).then_some(q.as_str())
        }
        _ => None,
    };
    let schema = match (schema, c.qualifiers.iter().next()) {
        (Some(_), Some(q)) if only_other == Some(q.as_str()) => q.as_str(),
        (Some(s), _) => {
            if let Some(other) = c.qualifiers.iter().find(|q| *q != s) {
                return Err(RouteError::syntax(format!(
                    "statements over several schemas are not supported yet (current schema {s}, statement names {other})"
                )));
            }
            s
        }
        (None, Some(q)) if c.qualifiers.len() == 1 => q.as_str(),
        // No schema and no table (`SELECT @@max_allowed_packet` on connect): any schema's node
        // answers it the same (SPEC §5.2 uses an arbitrary schema).
        (None, None) if c.occurrences.is_empty() => {
            match r
                .schemas
                .keys()
                .find(|k| view.access.is_none_or(|a| a.may_use(k)))
            {
                Some(first) => first.as_str(),
                None => return Err(RouteError::no_database()),
            }
        }
        _ => return Err(RouteError::no_database()),
    };
    let s = r
        .schema(schema)
        .ok_or_else(|| RouteError::unknown_database(schema))?;
    if let Some(cte) = c.ctes.iter().find(|n| s.tables.contains_key(*n)) {
        return Err(RouteError::syntax(format!(
            "a WITH query named like table {cte} is not supported (rename it)"
        )));
    }
    let mut edits = Edits::qualifiers(stmt, &c.qualifier_spans);
    if !is_ddl(&statement) {
        // DATABASE() answers the session's logical schema, not the dataNode's database.
        let current = view.schema.unwrap_or(&s.name);
        let database = || format!("'{}'", current.replace('\\', "\\\\").replace('\'', "''"));
        // VERSION() answers the version the greeting announced, not the backend's (drivers
        // check one against the other: SQLAlchemy's `SELECT VERSION() LIKE '%MariaDB%'`).
        // So do `@@version` and `@@version_comment`, as `SELECT @@version` alone and SHOW
        // VARIABLES do.
        let version = || format!("'{}'", crate::version::function_version());
        let comment = || format!("'{}'", crate::version::VERSION_COMMENT);
        let found: [(_, &dyn Fn() -> String); 4] = [
            (rewrite::database_calls(stmt), &database),
            (rewrite::version_calls(stmt), &version),
            (rewrite::global_variable_refs(stmt, "version"), &version),
            (
                rewrite::global_variable_refs(stmt, "version_comment"),
                &comment,
            ),
        ];
        // The session's character sets are the gateway's (the backends' connections stay
        // utf8mb4): `@@character_set_client` and `@@character_set_results` answer them.
        let mut found: Vec<Found<'_>> = found.into();
        let client = || format!("'{}'", view.charsets.map_or("utf8mb4", |c| c.0));
        let results = || match view.charsets.and_then(|c| c.1) {
            Some(name) => format!("'{name}'"),
            None => "NULL".to_string(),
        };
        if view.charsets.is_some() {
            found.push((
                rewrite::session_variable_refs(stmt, "character_set_client"),
                &client,
            ));
            found.push((
                rewrite::session_variable_refs(stmt, "character_set_results"),
                &results,
            ));
        }
        // FOUND_ROWS(), LAST_INSERT_ID(), ROW_COUNT() and CONNECTION_ID() answer the
        // session's values, which the gateway keeps: a pooled connection's own are another
        // statement's (its thread id another connection's).
        let (found_rows, last_insert_id, row_count, connection_id);
        if let Some(counters) = view.counters {
            let refs = rewrite::counter_refs(stmt);
            found_rows = move || counters.literal(Counter::FoundRows);
            last_insert_id = move || counters.literal(Counter::LastInsertId);
            row_count = move || counters.literal(Counter::RowCount);
            connection_id = move || counters.literal(Counter::ConnectionId);
            found.push((refs.found_rows, &found_rows));
            found.push((refs.last_insert_id, &last_insert_id));
            found.push((refs.row_count, &row_count));
            found.push((refs.connection_id, &connection_id));
        }
        // (The literals are written only for a statement that has such a call: most have none.)
        let found: Vec<_> = found.into_iter().filter(|(c, _)| !c.is_empty()).collect();
        // An item without an alias keeps its label, its text as written
        // (`@@character_set_client`, `database()` in `SELECT database(), 1`, `concat(version(),
        // 'x')`): found on the statement's tokens, read once, for a statement of at most
        // LABELLED_BYTES with at most LABELLED_CALLS calls (each call's select list is scanned:
        // beyond, the items keep the values as labels rather than cost a client's statement
        // calls × length).
        const LABELLED_BYTES: usize = 64 * 1024;
        const LABELLED_CALLS: usize = 64;
        let calls: usize = found.iter().map(|(c, _)| c.len()).sum();
        let toks = (stmt.len() <= LABELLED_BYTES && calls <= LABELLED_CALLS)
            .then(|| rewrite::tokens(stmt))
            .flatten()
            .unwrap_or_default();
        for (calls, value) in found {
            let value = value();
            for call in calls {
                // MariaDB refuses aliases over 256 characters.
                let item = rewrite::unaliased_select_item(&toks, call.clone())
                    .filter(|i| stmt[i.clone()].chars().count() <= 256);
                // A string after the call (`DATABASE() 'alias'`, the canonical text has no
                // comments) would join a literal there (MySQL concatenates adjacent strings).
                let after = stmt[call.end..].trim_start();
                let string_follows = after.starts_with(['\'', '"'])
                    || (after.starts_with(['N', 'n']) && after[1..].starts_with('\''));
                let text = match (string_follows, item) {
                    (true, _) => format!("({value})"),
                    (false, Some(item)) if item.end == call.end => {
                        format!("{value} AS {}", rewrite::backquoted(&stmt[item]))
                    }
                    (false, Some(item)) => {
                        // `AS` after the item's last character (`)`, a digit).
                        let label = rewrite::backquoted(&stmt[item.clone()]);
                        let last = stmt[..item.end].chars().next_back().unwrap_or(')');
                        edits.push(
                            item.end - last.len_utf8()..item.end,
                            Replacement::Text(format!("{last} AS {label}")),
                        );
                        value.clone()
                    }
                    (false, None) => value.clone(),
                };
                edits.push(call, Replacement::Text(text));
            }
        }
    }
    let columns_used = std::cell::Cell::new(false);
    let ctx = Ctx {
        r,
        s,
        stmt,
        edits,
        columns: view.columns,
        columns_used: &columns_used,
    };
    // Occurrences that name configured-or-unknown tables of this schema (not CTEs, not system
    // tables, not other schemas).
    let occurrences: Vec<Occurrence> = c
        .occurrences
        .into_iter()
        .filter(|o| !(o.qualifier.is_none() && (c.ctes.contains(&o.name) || o.name == "DUAL")))
        .filter(|o| {
            !o.qualifier
                .as_deref()
                .is_some_and(|q| SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(q)))
        })
        .collect();
    check_access(view, &s.name, &statement, &c.qualifiers)?;
    // An INSERT is placed by its target and sources; its sequences' dataNode is checked on
    // the plan (`sequence::keep_on_node`): a value drawn from a sequence reads no rows.
    // Elsewhere a sequence is placed like a table, after the statement's tables: never the
    // "first table" that decides where a statement over undeclared tables goes (SPEC §5.4).
    let occurrences: Vec<Occurrence> = match statement {
        Statement::Insert(_) => occurrences.into_iter().filter(|o| !o.sequence).collect(),
        _ => {
            let (sequences, tables): (Vec<_>, Vec<_>) =
                occurrences.into_iter().partition(|o| o.sequence);
            tables.into_iter().chain(sequences).collect()
        }
    };
    // An undeclared name that is another schema's table in the default dataNode's database
    // would reach that table past its schema's rules and `<privileges>`.
    // (An INSERT's target is not among the occurrences.)
    let target = match &statement {
        Statement::Insert(i) => match &i.table {
            TableObject::TableName(n) => {
                n.0.last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.to_ascii_uppercase())
            }
            _ => None,
        },
        _ => None,
    };
    if !s.shadowed.is_empty() {
        for name in occurrences
            .iter()
            .filter(|o| !o.sequence)
            .map(|o| o.name.as_str())
            .chain(target.as_deref())
            .filter(|name| ctx.table(name).is_none())
        {
            s.check_undeclared(name)?;
        }
    }
    let sequence_node = sequence::node_of_sequences(r, s, &c.sequences)?;
    let returning = match &statement {
        Statement::Insert(i) => i.returning.is_some(),
        Statement::Update(u) => u.returning.is_some(),
        Statement::Delete(d) => d.returning.is_some(),
        _ => false,
    };
    let mut routed = route_parsed(&ctx, &statement, &occurrences)?;
    if let Some(place) = &sequence_node {
        sequence::keep_on_node(&mut routed, place)?;
    }
    hints.columns_used = columns_used.get();
    hints.literal_free = matches!(statement, Statement::Query(_))
        && s.default_node.is_some()
        && occurrences
            .first()
            .is_some_and(|o| ctx.table(&o.name).is_none());
    // `PROCEDURE ANALYSE()` describes the columns of the whole result: only one node's
    // statement, passed on as it is, gives that (several nodes would each describe their own
    // rows, with their physical database in `Field_name`).
    if procedure_analyse(stmt)
        && !matches!(&routed, Routed::Plan(p) if p.targets.len() == 1 && p.merge.is_none())
    {
        return Err(RouteError::syntax(format!(
            "PROCEDURE ANALYSE needs a statement that runs on one dataNode, as written (schema {}): this one reads several dataNodes or is answered by the gateway",
            s.name
        )));
    }
    if returning && matches!(&routed, Routed::Plan(p) if p.targets.len() > 1) {
        return Err(RouteError::syntax(
            "RETURNING from a write to several dataNodes is not supported yet",
        ));
    }
    Ok(routed)
}

/// Whether `stmt` has MariaDB's `PROCEDURE ANALYSE(..)` clause (by tokens, so never inside a
/// string or comment), which the parse does not see (module `forms`).
fn procedure_analyse(stmt: &str) -> bool {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    scan::contains_ignore_ascii_case(stmt, "ANALYSE")
        && rewrite::tokens(stmt).is_some_and(|toks| {
            toks.windows(3).any(|w| {
                word(&w[0].0, "PROCEDURE")
                    && word(&w[1].0, "ANALYSE")
                    && matches!(w[2].0, Token::LParen)
            })
        })
}

//! Unit tests of the merge planner: which SELECTs over several dataNodes get which merge and
//! node edits, and which are refused.

use super::*;
use crate::route::Refusal;
use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

/// The FROM columns of the tests' table `t` (its GROUP BY aliases are no column of it).
fn table_t() -> FromColumns {
    from_tables(&[&["id", "a", "b", "grp", "name", "code", "q", "x"]])
}

/// FROM columns of tables with these columns.
fn from_tables(tables: &[&[&str]]) -> FromColumns {
    FromColumns {
        tables: tables
            .iter()
            .map(|c| FromTable::Columns(c.iter().map(|c| c.to_string()).collect()))
            .collect(),
    }
}

/// The merge and the node statement of `sql` over several nodes (no sharding column known).
fn planned(sql: &str) -> Result<(Merge, String), RouteError> {
    let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
    let Statement::Query(q) = &stmts[0] else {
        panic!("not a query: {sql}")
    };
    let p = plan(
        sql,
        q,
        &Edits::default(),
        Vec::new(),
        None,
        &table_t(),
        None,
        4096,
    )?;
    Ok((p.merge, p.edits.apply(sql, "db")))
}

#[test]
fn a_constant_distinct_argument_is_grouped_by_its_alias() {
    for text in ["1", " (2) ", "-1", "+ 3", "((4))"] {
        assert!(integer_literal(text), "{text}");
    }
    for text in ["1.5", "'1'", "id", "1 + 1", "()", "-"] {
        assert!(!integer_literal(text), "{text}");
    }
    let (_, sql) = planned("SELECT COUNT(DISTINCT 1) FROM t").unwrap();
    assert!(sql.contains("GROUP BY `__manx_0`"), "{sql}");
    let (_, sql) = planned("SELECT COUNT(DISTINCT a) FROM t").unwrap();
    assert!(sql.contains("GROUP BY a"), "{sql}");
}

fn refused(sql: &str) -> String {
    match planned(sql) {
        Ok((_, node)) => panic!("{sql} was planned: {node}"),
        Err(e) => {
            assert_eq!(e.refusal, Refusal::Routing, "{sql}: {}", e.message);
            e.message
        }
    }
}

#[test]
fn count_distinct_groups_the_nodes_by_its_arguments() {
    let (m, node) = planned("SELECT COUNT(DISTINCT name) FROM t").unwrap();
    assert_eq!(
        node,
        "SELECT COUNT(DISTINCT name), name AS `__manx_0`, WEIGHT_STRING(RTRIM(name)) AS `__manx_1` FROM t GROUP BY name ORDER BY `__manx_0` "
    );
    let g = m.grouping.unwrap();
    assert!(g.keys.is_empty());
    assert_eq!(
        g.aggregates,
        [(
            ColumnRef::Visible(0),
            Aggregate::Distinct(DistinctOp::Count)
        )]
    );
    assert_eq!(
        g.sub_keys,
        [SortKey {
            column: ColumnRef::Hidden(0),
            weight: Some(ColumnRef::Hidden(1)),
            desc: false,
        }]
    );
    assert_eq!(m.node_order, g.sub_keys);
    assert_eq!(g.max_group_bytes, 4096);
}

#[test]
fn distinct_sub_keys_follow_the_group_keys_and_limits_stay_off_the_nodes() {
    let (m, node) = planned(
        "SELECT grp, COUNT(DISTINCT a, b), COUNT(*), AVG(q) FROM t WHERE x > 1 GROUP BY grp HAVING COUNT(DISTINCT b, a) > 1 ORDER BY grp DESC LIMIT 2",
    )
    .unwrap();
    assert_eq!(
        node,
        "SELECT grp, COUNT(DISTINCT a, b), COUNT(*), AVG(q), WEIGHT_STRING(RTRIM(grp)) AS `__manx_0`, SUM(q) AS `__manx_1`, COUNT(q) AS `__manx_2`, COUNT(DISTINCT b, a) AS `__manx_3`, a AS `__manx_4`, WEIGHT_STRING(RTRIM(a)) AS `__manx_5`, b AS `__manx_6`, WEIGHT_STRING(RTRIM(b)) AS `__manx_7` FROM t WHERE x > 1 GROUP BY grp, a, b  ORDER BY grp DESC, `__manx_4`, `__manx_6` "
    );
    let g = m.grouping.as_ref().unwrap();
    assert_eq!(g.sub_keys.len(), 2);
    assert_eq!(m.node_order.len(), 3);
    assert_eq!(m.node_order[1..], g.sub_keys[..]);
    assert_eq!(m.limit, Some((0, 2)));
    assert!(g.having.is_some());
}

#[test]
fn group_concat_order_leads_the_sub_keys_and_its_separator_is_a_column() {
    let (m, node) = planned(
        "SELECT grp, GROUP_CONCAT(DISTINCT name, code ORDER BY code DESC SEPARATOR '; ') AS g FROM t GROUP BY grp",
    )
    .unwrap();
    assert_eq!(
        node,
        "SELECT grp, GROUP_CONCAT(DISTINCT name, code ORDER BY code DESC SEPARATOR '; ') AS g, WEIGHT_STRING(RTRIM(grp)) AS `__manx_0`, '; ' AS `__manx_1`, @@SESSION.group_concat_max_len AS `__manx_2`, code AS `__manx_3`, WEIGHT_STRING(RTRIM(code)) AS `__manx_4`, name AS `__manx_5`, WEIGHT_STRING(RTRIM(name)) AS `__manx_6` FROM t GROUP BY grp, code, name ORDER BY grp, `__manx_3` DESC, `__manx_5` "
    );
    let g = m.grouping.unwrap();
    assert_eq!(
        g.aggregates,
        [(
            ColumnRef::Visible(1),
            Aggregate::GroupConcat {
                distinct: true,
                separator: Some(ColumnRef::Hidden(1)),
                max_len: ColumnRef::Hidden(2),
            }
        )]
    );
    assert!(g.sub_keys[0].desc && !g.sub_keys[1].desc);
    // Without DISTINCT or ORDER BY each node's GROUP_CONCAT is a piece: no sub-keys.
    let (m, node) = planned("SELECT GROUP_CONCAT(name) FROM t").unwrap();
    assert!(m.grouping.unwrap().sub_keys.is_empty());
    assert_eq!(
        node,
        "SELECT GROUP_CONCAT(name), @@SESSION.group_concat_max_len AS `__manx_0` FROM t"
    );
}

#[test]
fn groups_ordered_by_an_aggregate_are_buffered_on_the_nodes_as_one_server_would() {
    let (m, node) =
        planned("SELECT grp, COUNT(DISTINCT a) AS n FROM t GROUP BY grp ORDER BY n DESC, SUM(q)")
            .unwrap();
    assert!(
        node.starts_with("SELECT SQL_BUFFER_RESULT grp, COUNT(DISTINCT a) AS n,"),
        "{node}"
    );
    assert_eq!(m.order.len(), 2);
    // Ordered by the group keys: no temporary table on one server either.
    let (_, node) =
        planned("SELECT grp, COUNT(DISTINCT a) FROM t GROUP BY grp ORDER BY grp").unwrap();
    assert!(!node.contains("SQL_BUFFER_RESULT"), "{node}");
    let (_, node) = planned("SELECT grp, COUNT(a) FROM t GROUP BY grp ORDER BY COUNT(a)").unwrap();
    assert!(!node.contains("SQL_BUFFER_RESULT"), "{node}");
}

#[test]
fn group_by_is_placed_before_having_order_and_limit() {
    let (_, node) = planned(
        "SELECT SUM(DISTINCT q) FROM t WHERE a = 1 HAVING SUM(DISTINCT q) > 2 ORDER BY 1 LIMIT 1 FOR UPDATE",
    )
    .unwrap();
    assert_eq!(
        node,
        "SELECT SUM(DISTINCT q), q AS `__manx_0`, WEIGHT_STRING(RTRIM(q)) AS `__manx_1` FROM t WHERE a = 1 GROUP BY q  ORDER BY `__manx_0`  FOR UPDATE"
    );
    let (_, node) = planned("SELECT AVG(DISTINCT 1) FROM t ORDER BY 1").unwrap();
    assert_eq!(
        node,
        "SELECT AVG(DISTINCT 1), 1 AS `__manx_0` FROM t GROUP BY `__manx_0` ORDER BY `__manx_0`"
    );
}

#[test]
fn what_cannot_be_merged_exactly_is_refused_by_name() {
    for (sql, text) in [
        (
            "SELECT COUNT(DISTINCT a), COUNT(DISTINCT b) FROM t",
            "DISTINCT aggregates over different expressions",
        ),
        (
            "SELECT GROUP_CONCAT(a ORDER BY a), GROUP_CONCAT(b ORDER BY b DESC) FROM t",
            "GROUP_CONCATs with different ORDER BY",
        ),
        (
            "SELECT COUNT(DISTINCT a), GROUP_CONCAT(b ORDER BY c) FROM t",
            "GROUP_CONCAT ORDER BY over expressions beside the DISTINCT ones",
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT a ORDER BY b) FROM t",
            "GROUP_CONCAT ORDER BY over expressions beside the DISTINCT ones",
        ),
        (
            "SELECT GROUP_CONCAT(a SEPARATOR \"-\") FROM t",
            "a SEPARATOR that is not one single-quoted string",
        ),
        (
            "SELECT GROUP_CONCAT(a ORDER BY 1) FROM t",
            "an ORDER BY position",
        ),
        (
            "SELECT grp, GROUP_CONCAT(a) AS c FROM t GROUP BY grp ORDER BY c",
            "ordering by a GROUP_CONCAT",
        ),
        (
            "SELECT 'x', COUNT(DISTINCT a) FROM t",
            "select item 1 beside DISTINCT aggregates",
        ),
        (
            "SELECT COUNT(DISTINCT a) + 1 FROM t",
            "an aggregate inside an expression",
        ),
        ("SELECT STDDEV_POP(a) FROM t", "statistical"),
    ] {
        let message = refused(sql);
        assert!(message.contains(text), "{sql}: {message}");
    }
}

/// The merge and the node statement of `sql` as the router parses it (module `forms`: MariaDB
/// forms the parser does not read).
fn planned_as_routed(sql: &str) -> (Merge, String) {
    let stmts = crate::route::forms::parse(sql).unwrap();
    let Statement::Query(q) = &stmts[0] else {
        panic!("not a query: {sql}")
    };
    let p = plan(
        sql,
        q,
        &Edits::default(),
        Vec::new(),
        None,
        &table_t(),
        None,
        4096,
    )
    .unwrap();
    (p.merge, p.edits.apply(sql, "db"))
}

#[test]
fn a_digit_led_alias_is_one_name_in_the_texts_the_nodes_get() {
    let (_, node) = planned_as_routed("SELECT a AS 1Ea FROM t ORDER BY 1Ea");
    assert_eq!(
        node,
        "SELECT a AS 1Ea, WEIGHT_STRING(RTRIM(a)) AS `__manx_0` FROM t ORDER BY 1Ea"
    );
    let (_, node) = planned_as_routed("SELECT a 1Eq, COUNT(*) FROM t GROUP BY 1Eq");
    assert_eq!(
        node,
        "SELECT a 1Eq, COUNT(*), WEIGHT_STRING(RTRIM(a)) AS `__manx_0` FROM t GROUP BY 1Eq ORDER BY 1Eq "
    );
}

#[test]
fn no_item_text_runs_into_procedure_analyse() {
    for sql in [
        "SELECT a FROM t ORDER BY a PROCEDURE ANALYSE()",
        "SELECT a, COUNT(*) FROM t GROUP BY a PROCEDURE ANALYSE(10, 20)",
        "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1 PROCEDURE ANALYSE()",
    ] {
        let (_, node) = planned_as_routed(sql);
        assert!(node.contains("WEIGHT_STRING(RTRIM(a)) AS"), "{sql}: {node}");
        assert_eq!(node.matches("PROCEDURE").count(), 1, "{sql}: {node}");
    }
}

/// `GROUP BY a DESC` (MariaDB sorts the groups so): refused over several dataNodes unless an
/// ORDER BY decides the order, and then the group keys the nodes get stop before the word
/// (they were `n DESC AS __manx_0`, a syntax error on the nodes).
#[test]
fn a_sorted_group_by_needs_an_order_by_and_its_keys_stop_before_the_word() {
    let plan_of = |sql: &str| {
        let stmts = crate::route::forms::parse(sql).unwrap();
        let Statement::Query(q) = &stmts[0] else {
            panic!("not a query: {sql}")
        };
        plan(
            sql,
            q,
            &Edits::default(),
            Vec::new(),
            None,
            &table_t(),
            None,
            4096,
        )
        .map(|p| p.edits.apply(sql, "db"))
    };
    for sql in [
        "SELECT a AS n, COUNT(*) FROM t GROUP BY n DESC",
        "SELECT a, b, COUNT(*) FROM t GROUP BY a, b ASC",
    ] {
        let e = plan_of(sql).unwrap_err();
        assert!(
            e.message.contains("GROUP BY ... ASC / DESC"),
            "{sql}: {}",
            e.message
        );
    }
    let node = plan_of("SELECT a AS n, COUNT(*) FROM t GROUP BY n DESC ORDER BY n DESC").unwrap();
    let upper = node.to_ascii_uppercase();
    assert!(
        !upper.contains("N DESC AS") && !upper.contains("(N DESC"),
        "{node}"
    );
}

/// The merge and node statement of `sql` with these FROM columns and sharding column.
fn planned_from(
    sql: &str,
    from: &FromColumns,
    shard: Option<&str>,
) -> Result<(Merge, String), RouteError> {
    let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
    let Statement::Query(q) = &stmts[0] else {
        panic!("not a query: {sql}")
    };
    let shard = shard.map(|column| ShardColumn {
        column,
        hashes_text: false,
        qualifiers: vec!["t".to_string()],
    });
    let p = plan(
        sql,
        q,
        &Edits::default(),
        Vec::new(),
        shard,
        from,
        None,
        4096,
    )?;
    Ok((p.merge, p.edits.apply(sql, "db")))
}

/// MariaDB reads an unqualified GROUP BY name as a FROM table's column before a select alias of
/// that name (with warning 1052); the merge grouped the nodes' rows by the alias.
#[test]
fn a_group_by_name_that_is_an_alias_and_a_column_groups_by_the_column() {
    let sql = "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY b";
    let (m, node) = planned_from(sql, &from_tables(&[&["a", "b"]]), None).unwrap();
    // The nodes sort by an extra column holding the column: `ORDER BY b` is the alias to them.
    assert_eq!(
        node,
        "SELECT a % 2 AS b, COUNT(*), b AS `__manx_0`, WEIGHT_STRING(RTRIM(b)) AS `__manx_1` FROM t GROUP BY b ORDER BY `__manx_0` "
    );
    let g = m.grouping.unwrap();
    assert_eq!(
        g.keys,
        [SortKey {
            column: ColumnRef::Hidden(0),
            weight: Some(ColumnRef::Hidden(1)),
            desc: false,
        }]
    );
    assert_eq!(m.node_order, g.keys);
    // No such column: the alias, as before.
    let (m, node) = planned_from(sql, &from_tables(&[&["a", "c"]]), None).unwrap();
    assert_eq!(
        node,
        "SELECT a % 2 AS b, COUNT(*), WEIGHT_STRING(RTRIM(a % 2)) AS `__manx_0` FROM t GROUP BY b ORDER BY b "
    );
    assert_eq!(m.grouping.unwrap().keys[0].column, ColumnRef::Visible(0));
    // Two tables with the column: MariaDB passes the ambiguous column over for the alias.
    let (m, _) = planned_from(sql, &from_tables(&[&["a", "b"], &["B"]]), None).unwrap();
    assert_eq!(m.grouping.unwrap().keys[0].column, ColumnRef::Visible(0));
    // An alias of another column (`a AS b`) is no more that column than an expression is.
    let (m, _) = planned_from(
        "SELECT a AS b, COUNT(*) FROM t GROUP BY b",
        &from_tables(&[&["a", "b"]]),
        None,
    )
    .unwrap();
    assert_eq!(m.grouping.unwrap().keys[0].column, ColumnRef::Hidden(0));
}

/// HAVING reads a bare name as the group column of that name before the alias; without such a
/// group column, as the alias. ORDER BY reads the alias.
#[test]
fn having_reads_the_group_column_and_order_by_the_alias() {
    let from = from_tables(&[&["a", "b"]]);
    let (m, node) = planned_from(
        "SELECT b + 0 AS b, COUNT(*) FROM t GROUP BY b HAVING b > 1",
        &from,
        None,
    )
    .unwrap();
    assert!(!node.contains("HAVING"), "{node}");
    assert_eq!(
        m.grouping.unwrap().having,
        Some(Having::Compare {
            column: ColumnRef::Hidden(0),
            op: CompareOp::Gt,
            number: "1".to_string(),
        })
    );
    // A qualified GROUP BY column is a group column of that name too.
    let (m, _) = planned_from(
        "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY t.b HAVING b > 1",
        &from,
        None,
    )
    .unwrap();
    let g = m.grouping.unwrap();
    assert_eq!(
        g.having,
        Some(Having::Compare {
            column: g.keys[0].column,
            op: CompareOp::Gt,
            number: "1".to_string(),
        })
    );
    assert_eq!(g.keys[0].column, ColumnRef::Hidden(0));
    let (m, _) = planned_from(
        "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY a HAVING b > 0",
        &from,
        None,
    )
    .unwrap();
    assert_eq!(
        m.grouping.unwrap().having,
        Some(Having::Compare {
            column: ColumnRef::Visible(0),
            op: CompareOp::Gt,
            number: "0".to_string(),
        })
    );
    // Grouped by the column, ordered by the alias: the groups are sorted after merging.
    let (m, node) = planned_from(
        "SELECT -b AS b, COUNT(*) FROM t GROUP BY b ORDER BY b",
        &from,
        None,
    )
    .unwrap();
    assert!(node.ends_with("GROUP BY b ORDER BY `__manx_0`"), "{node}");
    assert_eq!(m.grouping.unwrap().keys[0].column, ColumnRef::Hidden(0));
    assert_eq!(m.order[0].column, ColumnRef::Visible(0));
}

/// Groups on the sharding column stay on their nodes; a GROUP BY name that reads as the alias
/// is not that column, whatever its name, and one that reads as the column is ordered by it.
#[test]
fn a_sharding_column_name_groups_locally_only_when_it_is_the_column() {
    let sql = "SELECT -id AS id, COUNT(*) FROM t GROUP BY id";
    let (m, node) = planned_from(sql, &from_tables(&[&["id", "a"]]), Some("ID")).unwrap();
    assert!(m.grouping.is_none(), "groups are node-local");
    assert!(node.ends_with("GROUP BY id ORDER BY `__manx_0` "), "{node}");
    assert_eq!(m.node_order[0].column, ColumnRef::Hidden(0));
    // Also in another table of the FROM clause: the alias, so groups span nodes.
    let (m, _) = planned_from(sql, &from_tables(&[&["id", "a"], &["id"]]), Some("ID")).unwrap();
    let g = m.grouping.expect("merged groups");
    assert_eq!(g.keys[0].column, ColumnRef::Visible(0));
}

/// Where the FROM columns are not known the name is refused, naming it (1235), never guessed.
#[test]
fn a_group_by_name_the_from_columns_do_not_decide_is_refused_by_name() {
    let from = FromColumns {
        tables: vec![
            FromTable::Columns(vec!["a".to_string()].into()),
            FromTable::Unknown("the derived table d".to_string()),
        ],
    };
    let e = planned_from("SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY b", &from, None).unwrap_err();
    assert_eq!(e.refusal, Refusal::NotSupported);
    assert!(
        e.message
            .starts_with("Column 'b' in GROUP BY over several dataNodes is ambiguous")
            && e.message.contains("the derived table d"),
        "{}",
        e.message
    );
    // Known to be in two tables: decided (the alias) whatever the unknown one holds.
    let from = FromColumns {
        tables: vec![
            FromTable::Columns(vec!["b".to_string()].into()),
            FromTable::Columns(vec!["B".to_string()].into()),
            FromTable::Unknown("the derived table d".to_string()),
        ],
    };
    assert!(planned_from("SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY b", &from, None).is_ok());
    // Names that mean the same whatever the columns need none.
    for sql in [
        "SELECT b, a % 2 AS b, COUNT(*) FROM t GROUP BY b",
        "SELECT (b) AS b, COUNT(*) FROM t GROUP BY b",
        "SELECT a % 2 AS c, COUNT(*) FROM t GROUP BY b",
        "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY t.b",
        "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY a % 2 ORDER BY b",
    ] {
        let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
        let Statement::Query(q) = &stmts[0] else {
            unreachable!()
        };
        assert!(!needs_from_columns(q), "{sql}");
        assert!(
            planned_from(sql, &FromColumns::default(), None).is_ok(),
            "{sql}"
        );
    }
    for sql in [
        "SELECT a % 2 AS b, COUNT(*) FROM t GROUP BY b",
        "SELECT a AS `B`, COUNT(*) FROM t GROUP BY b",
        "SELECT t.b AS b, COUNT(*) FROM t GROUP BY b",
    ] {
        let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
        let Statement::Query(q) = &stmts[0] else {
            unreachable!()
        };
        assert!(needs_from_columns(q), "{sql}");
    }
}

//! Unit tests of the merge primitives over node row streams: merge-sort, grouping and aggregates,
//! HAVING, sort and limit.

use super::*;
use crate::route::Grouping;

fn column(name: &str, column_type: ColumnType, charset: u16, decimals: u8) -> Column {
    Column {
        name: name.to_string(),
        table: String::new(),
        column_type,
        flags: ColumnFlags::empty(),
        charset,
        length: 20,
        decimals,
    }
}

fn v(s: Option<&str>) -> Value {
    s.map_or(Value::Null, |s| Value::Bytes(s.as_bytes().to_vec()))
}

fn stream(rows: Vec<Vec<Option<&str>>>) -> RowStream<'static> {
    let rows: Vec<Result<Row, BackendError>> = rows
        .into_iter()
        .map(|r| Ok(r.into_iter().map(v).collect()))
        .collect();
    futures::stream::iter(rows).boxed()
}

async fn run(
    m: &Merge,
    columns: Vec<Column>,
    streams: Vec<RowStream<'static>>,
) -> Vec<Vec<Option<String>>> {
    let (_, rows) = super::rows(m, Arc::from(columns), streams, false, Arc::default()).unwrap();
    rows.map(|r| {
        r.unwrap()
            .into_iter()
            .map(|v| text(&v).map(|t| t.into_owned()))
            .collect()
    })
    .collect()
    .await
}

fn merge(node_order: Vec<SortKey>) -> Merge {
    Merge {
        hidden: 0,
        node_order,
        grouping: None,
        order: Vec::new(),
        limit: None,
    }
}

fn key(i: usize, desc: bool) -> SortKey {
    SortKey {
        column: ColumnRef::Visible(i),
        weight: None,
        desc,
    }
}

#[tokio::test]
async fn merge_sort_puts_null_first_and_compares_numbers_as_numbers() {
    let cols = vec![column("d", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2)];
    let m = merge(vec![key(0, false)]);
    let out = run(
        &m,
        cols.clone(),
        vec![
            stream(vec![vec![None], vec![Some("-10.50")], vec![Some("9.00")]]),
            stream(vec![]),
            stream(vec![vec![Some("-2.00")], vec![Some("10.00")]]),
        ],
    )
    .await;
    let got: Vec<Option<&str>> = out.iter().map(|r| r[0].as_deref()).collect();
    assert_eq!(
        got,
        [
            None,
            Some("-10.50"),
            Some("-2.00"),
            Some("9.00"),
            Some("10.00")
        ]
    );
    // Descending: NULL last.
    let m = merge(vec![key(0, true)]);
    let out = run(
        &m,
        cols,
        vec![
            stream(vec![vec![Some("9.00")], vec![None]]),
            stream(vec![vec![Some("10.00")], vec![Some("-2.00")]]),
        ],
    )
    .await;
    let got: Vec<Option<&str>> = out.iter().map(|r| r[0].as_deref()).collect();
    assert_eq!(got, [Some("10.00"), Some("9.00"), Some("-2.00"), None]);
}

#[tokio::test]
async fn strings_compare_by_weight_and_extra_columns_are_cut() {
    // utf8mb4_general_ci (45): the weight column decides, so 'B' sorts after 'a'.
    let cols = vec![
        column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("w", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
    ];
    let m = Merge {
        hidden: 1,
        node_order: vec![SortKey {
            column: ColumnRef::Visible(0),
            weight: Some(ColumnRef::Hidden(0)),
            desc: false,
        }],
        grouping: None,
        order: Vec::new(),
        limit: Some((1, 2)),
    };
    let out = run(
        &m,
        cols,
        vec![
            stream(vec![vec![Some("a"), Some("A")], vec![Some("c"), Some("C")]]),
            stream(vec![vec![Some("B"), Some("B")], vec![Some("d"), Some("D")]]),
        ],
    )
    .await;
    assert_eq!(
        out,
        [vec![Some("B".to_string())], vec![Some("c".to_string())]]
    );
}

/// `SELECT MAX(s) a, MAX(s) b`: both copies share one hidden weight column; the second
/// copy must compare against the group's value before this row, not after the first copy
/// took it (it kept the first node's value).
#[tokio::test]
async fn repeated_string_maxima_share_their_weight_column() {
    // a, b | weight(MAX(s))
    let cols = vec![
        column("a", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("b", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("w", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
    ];
    let max = Aggregate::Max {
        weight: Some(ColumnRef::Hidden(0)),
    };
    let m = Merge {
        hidden: 1,
        node_order: Vec::new(),
        grouping: Some(Grouping {
            keys: Vec::new(),
            aggregates: vec![(ColumnRef::Visible(0), max), (ColumnRef::Visible(1), max)],
            having: None,
            sub_keys: Vec::new(),
            max_group_bytes: 1 << 20,
        }),
        order: Vec::new(),
        limit: None,
    };
    let row = |v: &'static str, w: &'static str| vec![Some(v), Some(v), Some(w)];
    let out = run(
        &m,
        cols,
        vec![
            stream(vec![row("e", "E")]),
            stream(vec![row("z", "Z")]),
            stream(vec![row("b", "B")]),
        ],
    )
    .await;
    let s = |x: &str| Some(x.to_string());
    assert_eq!(out, [vec![s("z"), s("z")]]);
}

#[tokio::test]
async fn groups_spanning_nodes_fold_their_aggregates() {
    // g, COUNT(*), SUM(d), MIN(s), AVG(i) | weight(g), weight(MIN(s)), SUM(i), COUNT(i)
    let cols = vec![
        column("g", ColumnType::MYSQL_TYPE_LONG, 63, 0),
        column("c", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
        column("s", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2),
        column("m", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("a", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 4),
        column("wm", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
        column("si", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 0),
        column("ci", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
    ];
    let m = Merge {
        hidden: 3,
        node_order: vec![key(0, false)],
        grouping: Some(Grouping {
            keys: vec![key(0, false)],
            aggregates: vec![
                (ColumnRef::Visible(1), Aggregate::Count),
                (ColumnRef::Visible(2), Aggregate::Sum),
                (
                    ColumnRef::Visible(3),
                    Aggregate::Min {
                        weight: Some(ColumnRef::Hidden(0)),
                    },
                ),
                (
                    ColumnRef::Visible(4),
                    Aggregate::Avg {
                        sum: ColumnRef::Hidden(1),
                        count: ColumnRef::Hidden(2),
                    },
                ),
            ],
            having: None,
            sub_keys: Vec::new(),
            max_group_bytes: 1 << 20,
        }),
        order: vec![key(1, true)],
        limit: None,
    };
    let row = |g, c, s, m: Option<&'static str>, a, wm: Option<&'static str>, si, ci| {
        vec![Some(g), Some(c), s, m, a, wm, si, Some(ci)]
    };
    let out = run(
        &m,
        cols,
        vec![
            stream(vec![
                row(
                    "1",
                    "2",
                    Some("1.25"),
                    Some("b"),
                    Some("1.5000"),
                    Some("B"),
                    Some("3"),
                    "2",
                ),
                row("2", "1", None, None, None, None, None, "0"),
            ]),
            stream(vec![row(
                "1",
                "3",
                Some("2.50"),
                Some("A"),
                Some("0.3333"),
                Some("A"),
                Some("1"),
                "3",
            )]),
        ],
    )
    .await;
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        out,
        [
            // COUNT 5, SUM 3.75, MIN by weight 'A', AVG (3+1)/(2+3) = 0.8 at 4 places.
            vec![s("1"), s("5"), s("3.75"), s("A"), s("0.8000")],
            // All-NULL SUM, MIN and AVG stay NULL.
            vec![s("2"), s("1"), None, None, None],
        ]
    );
}

/// `SELECT g, COUNT(DISTINCT s), COUNT(*) ... GROUP BY g` as the nodes answer it grouped
/// by (g, s): `s` a string column whose weights make 'a' and 'A' equal (from two nodes:
/// one value), NULL ignored, COUNT(*) over every sub-group.
#[tokio::test]
async fn count_distinct_skips_values_repeated_across_nodes() {
    // g, cd, n | s, weight(s)
    let cols = vec![
        column("g", ColumnType::MYSQL_TYPE_LONG, 63, 0),
        column("cd", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
        column("n", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
        column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("w", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
    ];
    let sub = SortKey {
        column: ColumnRef::Hidden(0),
        weight: Some(ColumnRef::Hidden(1)),
        desc: false,
    };
    let m = Merge {
        hidden: 2,
        node_order: vec![key(0, false), sub],
        grouping: Some(Grouping {
            keys: vec![key(0, false)],
            aggregates: vec![
                (
                    ColumnRef::Visible(1),
                    Aggregate::Distinct(DistinctOp::Count),
                ),
                (ColumnRef::Visible(2), Aggregate::Count),
            ],
            having: None,
            sub_keys: vec![sub],
            max_group_bytes: 1 << 20,
        }),
        order: Vec::new(),
        limit: None,
    };
    let row = |g: &'static str, s: Option<&'static str>, n: &'static str| {
        let w = s.map(|x| if x == "a" { "A" } else { x });
        vec![
            Some(g),
            Some(if s.is_some() { "1" } else { "0" }),
            Some(n),
            s,
            w,
        ]
    };
    let out = run(
        &m,
        cols.clone(),
        vec![
            stream(vec![
                row("1", None, "2"),
                row("1", Some("1"), "1"),
                row("1", Some("a"), "1"),
            ]),
            stream(vec![row("1", Some("A"), "2"), row("2", None, "1")]),
            stream(vec![row("1", Some("1"), "4"), row("1", Some("b"), "1")]),
        ],
    )
    .await;
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        out,
        [
            // Distinct non-NULL values 1, a, b; COUNT(*) 2 + 1 + 1 + 2 + 4 + 1.
            vec![s("1"), s("3"), s("11")],
            // Only NULL: COUNT 0.
            vec![s("2"), s("0"), s("1")],
        ]
    );
    // SUM / AVG (DISTINCT) of a string: MySQL compares the values as numbers.
    let mut m2 = m.clone();
    if let Some(g) = &mut m2.grouping {
        g.aggregates[0].1 = Aggregate::Distinct(DistinctOp::Sum);
    }
    let e = super::rows(
        &m2,
        Arc::from(cols),
        vec![stream(vec![])],
        false,
        Arc::default(),
    )
    .err()
    .expect("refused");
    let (code, _, message) = e.refusal().unwrap();
    assert_eq!(code, 1235, "{message}");
    assert!(
        message.contains("SUM/AVG(DISTINCT) of string column s"),
        "{message}"
    );
}

/// `SUM(DISTINCT d), AVG(DISTINCT d)` of a DECIMAL: '1.50' and '1.5' from two nodes are one
/// value; the AVG column's own decimals (MySQL: the argument's + 4) are kept.
#[tokio::test]
async fn sum_and_avg_distinct_add_each_value_once() {
    // sd, ad | d
    let cols = vec![
        column("sd", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2),
        column("ad", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 6),
        column("d", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2),
    ];
    let sub = SortKey {
        column: ColumnRef::Hidden(0),
        weight: None,
        desc: false,
    };
    let m = Merge {
        hidden: 1,
        node_order: vec![sub],
        grouping: Some(Grouping {
            keys: Vec::new(),
            aggregates: vec![
                (ColumnRef::Visible(0), Aggregate::Distinct(DistinctOp::Sum)),
                (ColumnRef::Visible(1), Aggregate::Distinct(DistinctOp::Avg)),
            ],
            having: None,
            sub_keys: vec![sub],
            max_group_bytes: 1 << 20,
        }),
        order: Vec::new(),
        limit: None,
    };
    let row = |sd: Option<&'static str>, ad: Option<&'static str>, d: Option<&'static str>| {
        vec![sd, ad, d]
    };
    let out = run(
        &m,
        cols,
        vec![
            stream(vec![
                row(None, None, None),
                row(Some("-1.00"), Some("-1.000000"), Some("-1.00")),
                row(Some("1.50"), Some("1.500000"), Some("1.50")),
            ]),
            stream(vec![
                row(Some("1.5"), Some("1.500000"), Some("1.5")),
                row(Some("2.00"), Some("2.000000"), Some("2.00")),
            ]),
        ],
    )
    .await;
    let s = |x: &str| Some(x.to_string());
    // -1 + 1.5 + 2 = 2.50; / 3 = 0.833333 (half up at 6 places).
    assert_eq!(out, [vec![s("2.50"), s("0.833333")]]);
}

fn concat_merge(distinct: bool, implicit: bool) -> Merge {
    // GROUP_CONCAT(...) | sub-key s, weight, separator, @@group_concat_max_len
    let sub = SortKey {
        column: ColumnRef::Hidden(0),
        weight: Some(ColumnRef::Hidden(1)),
        desc: false,
    };
    let keys = if implicit {
        vec![]
    } else {
        vec![key(1, false)]
    };
    Merge {
        hidden: 4,
        node_order: keys.iter().copied().chain([sub]).collect(),
        grouping: Some(Grouping {
            keys,
            aggregates: vec![(
                ColumnRef::Visible(0),
                Aggregate::GroupConcat {
                    distinct,
                    separator: Some(ColumnRef::Hidden(2)),
                    max_len: ColumnRef::Hidden(3),
                },
            )],
            having: None,
            sub_keys: vec![sub],
            max_group_bytes: 12,
        }),
        order: Vec::new(),
        limit: None,
    }
}

fn concat_cols() -> Vec<Column> {
    vec![
        column("gc", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("g", ColumnType::MYSQL_TYPE_LONG, 63, 0),
        column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("w", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
        column("sep", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
        column("max", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
    ]
}

#[tokio::test]
async fn group_concat_joins_pieces_in_order_and_cuts_at_max_len() {
    let row = |piece: Option<&'static str>, g, s: &'static str, max: &'static str| {
        vec![piece, Some(g), Some(s), Some(s), Some(";"), Some(max)]
    };
    let streams = |max: &'static str| {
        vec![
            stream(vec![
                row(Some("a;a"), "1", "A", max),
                row(Some("c"), "1", "C", max),
                row(None, "2", "N", max),
            ]),
            stream(vec![
                row(Some("A"), "1", "A", max),
                row(Some("b"), "1", "B", max),
                row(Some(""), "3", "", max),
                row(Some("x"), "3", "X", max),
            ]),
        ]
    };
    let s = |x: &str| Some(x.to_string());
    let out = run(&concat_merge(false, false), concat_cols(), streams("1024")).await;
    assert_eq!(
        out,
        [
            vec![s("a;a;A;b;c"), s("1")],
            vec![None, s("2")],
            // An empty piece is a value: the separator follows it.
            vec![s(";x"), s("3")]
        ]
    );
    let out = run(&concat_merge(true, false), concat_cols(), streams("1024")).await;
    assert_eq!(
        out[0][0],
        s("a;a;b;c"),
        "'A' repeats 'a' (a;a is one node's piece)"
    );
    // group_concat_max_len 6: cut, the separator counting.
    let out = run(&concat_merge(false, false), concat_cols(), streams("6")).await;
    assert_eq!(out[0][0], s("a;a;A;"));
}

#[tokio::test]
async fn group_concat_cuts_at_a_character_and_refuses_past_the_bound() {
    let row = |piece: &'static str, s: &'static str, max: &'static str| {
        vec![
            Some(piece),
            Some("1"),
            Some(s),
            Some(s),
            Some(";"),
            Some(max),
        ]
    };
    let s = |x: &str| Some(x.to_string());
    // 'é' is two bytes: a cut at 4 bytes would split it, so 3 are kept.
    let out = run(
        &concat_merge(false, true),
        concat_cols(),
        vec![
            stream(vec![row("ab", "1", "4")]),
            stream(vec![row("é", "2", "4")]),
        ],
    )
    .await;
    assert_eq!(out, [vec![s("ab;"), s("1")]]);
    // max_len above the 12-byte bound: refused once the bytes pass it, not grown.
    let m = concat_merge(false, true);
    let (_, rows) = super::rows(
        &m,
        Arc::from(concat_cols()),
        vec![
            stream(vec![row("abcdefgh", "1", "100")]),
            stream(vec![row("ijklmnop", "2", "100")]),
        ],
        false,
        Arc::default(),
    )
    .unwrap();
    let got: Vec<Result<Row, BackendError>> = rows.collect().await;
    let err = got.into_iter().find_map(|r| r.err()).expect("refused");
    let (code, _, message) = err.refusal().unwrap();
    assert_eq!(code, 1235, "{message}");
    assert!(message.contains("12 bytes"), "{message}");
}

#[tokio::test]
async fn an_implicit_group_of_no_rows_is_one_row() {
    let m = concat_merge(false, true);
    let mut m2 = m.clone();
    if let Some(g) = &mut m2.grouping {
        g.aggregates[0].1 = Aggregate::Distinct(DistinctOp::Count);
    }
    let s = |x: &str| Some(x.to_string());
    let out = run(&m, concat_cols(), vec![stream(vec![]), stream(vec![])]).await;
    assert_eq!(out, [vec![None, None]]);
    let out = run(&m2, concat_cols(), vec![stream(vec![]), stream(vec![])]).await;
    assert_eq!(out, [vec![s("0"), None]]);
    // With group keys, no rows are no groups.
    let out = run(
        &concat_merge(false, false),
        concat_cols(),
        vec![stream(vec![])],
    )
    .await;
    assert!(out.is_empty());
}

#[tokio::test]
async fn a_node_failure_mid_merge_reaches_the_client() {
    let cols = vec![column("i", ColumnType::MYSQL_TYPE_LONG, 63, 0)];
    let m = merge(vec![key(0, false)]);
    let failing: RowStream<'static> = futures::stream::iter(vec![
        Ok(vec![v(Some("1"))]),
        Err(BackendError::Closed("gone".into())),
    ])
    .boxed();
    let (_, rows) = super::rows(
        &m,
        Arc::from(cols),
        vec![failing, stream(vec![vec![Some("2")]])],
        false,
        Arc::default(),
    )
    .unwrap();
    let got: Vec<Result<Row, BackendError>> = rows.collect().await;
    assert!(got.iter().any(|r| r.is_err()), "{got:?}");
}

#[test]
fn string_keys_over_mixed_weights_are_refused_and_numbers_are_not() {
    let s = column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0);
    let e = kind(&s, Some(1), true).unwrap_err();
    let (code, _, message) = e.refusal().unwrap();
    assert_eq!(code, 1235);
    assert!(message.contains("MySQL and PostgreSQL"), "{message}");
    assert_eq!(kind(&s, Some(1), false).unwrap(), Kind::Weight(1));
    let i = column("i", ColumnType::MYSQL_TYPE_LONG, 63, 0);
    assert_eq!(kind(&i, None, true).unwrap(), Kind::Int);
    let d = column("d", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2);
    assert_eq!(kind(&d, None, true).unwrap(), Kind::Decimal);
}

#[test]
fn decimal_and_time_text_compare_by_value() {
    assert_eq!(compare_decimal("-0.00", "0"), Ordering::Equal);
    assert_eq!(compare_decimal("10.5", "9.99"), Ordering::Greater);
    assert_eq!(compare_decimal("-10.5", "-9.99"), Ordering::Less);
    assert_eq!(compare_decimal("0012.3400", "12.34"), Ordering::Equal);
    assert!(time(&v(Some("-01:00:00"))) < time(&v(Some("00:00:00.5"))));
    assert!(time(&v(Some("100:00:00"))) > time(&v(Some("23:59:59.999999"))));
    assert_eq!(
        decimal_text(
            &(BigDecimal::from_str("2").unwrap() / BigDecimal::from(3)),
            4
        ),
        v(Some("0.6667"))
    );
    assert_eq!(double_text(3.0), "3");
    assert_eq!(double_text(1e20), "1e20");
}

/// The rows a LIMIT's offset drops are counted (MariaDB's `FOUND_ROWS()` counts them): the
/// offset when rows pass it, every row when it is past the last.
#[tokio::test]
async fn a_limit_counts_the_rows_its_offset_skipped() {
    let cols = vec![column("i", ColumnType::MYSQL_TYPE_LONG, 63, 0)];
    let nodes = || {
        vec![
            stream(vec![vec![Some("1")], vec![Some("3")], vec![Some("5")]]),
            stream(vec![vec![Some("2")], vec![Some("4")]]),
        ]
    };
    for (offset, count, sent, skipped) in [(3, 4, 2, 3), (1, 2, 2, 1), (100, 2, 0, 5)] {
        let mut m = merge(vec![key(0, false)]);
        m.limit = Some((offset, count));
        let counted = Arc::<std::sync::atomic::AtomicU64>::default();
        let (_, rows) =
            super::rows(&m, Arc::from(cols.clone()), nodes(), false, counted.clone()).unwrap();
        let got: Vec<Result<Row, BackendError>> = rows.collect().await;
        assert_eq!(got.len(), sent, "LIMIT {offset}, {count}");
        assert_eq!(
            counted.load(std::sync::atomic::Ordering::Relaxed),
            skipped,
            "LIMIT {offset}, {count}"
        );
    }
}

//! Differential test (issue 4): a sharded query must return what the same query returns on one
//! unsharded database holding the same rows.
//!
//! A seeded generator builds a dataset (NULLs, duplicates, mixed case and accented strings,
//! utf8mb4_general_ci oddities, a utf8mb4_bin column, negative numbers, BIGINT UNSIGNED above
//! 2^63, decimals, doubles, dates) and loads it through the gateway into three sharded tables
//! (`mod-long` on an INT id, `auto-sharding-long` ranges on a BIGINT id, `PartitionByString` on
//! a VARCHAR code) and one global table, and directly into the reference database
//! `t_diff_ref`. Then it runs several hundred generated queries plus hand-written tricky ones on
//! both and compares the answers: column labels, types, lengths, decimals and character sets,
//! then rows — as ordered lists where the query orders them completely, as multisets
//! otherwise, and by order-key sequence where the ORDER BY keys are selected but leave ties.
//! Strings a case-insensitive collation may show in any variant (group keys, DISTINCT values,
//! MIN/MAX of strings) are compared folded; DOUBLE values with a relative tolerance.
//!
//! A query the gateway refuses (errno 1064 or 1235, or a message saying "not supported") counts
//! as refused; any other gateway error or any differing answer is a failure.
//!
//! CI runs the first seed of [`SEEDS`]. A longer run:
//! `MANX_DIFF_SEEDS=all MANX_DIFF_QUERIES=3000 cargo test --test differential -- --nocapture`
//! (`MANX_DIFF_SEEDS` also takes a comma-separated list of numbers). After changing the
//! generator, `MANX_DIFF_ORACLE_CHECK=1` checks the comparison rules themselves (see
//! [`shuffled_copy`]).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::{Extra, Fixture, opts, primary};
use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Value};

/// Dataset and query seeds; CI runs the first.
const SEEDS: &[u64] = &[
    0x6d61_6e78_d1ff_0001,
    0x0000_0000_0000_0002,
    0x1234_5678_9abc_def0,
    0x0bad_cafe_f00d_0042,
];

/// Generated queries per seed (the hand-written ones come on top).
const GENERATED_QUERIES: usize = 650;

/// How many queries of a run (per seed) the gateway must answer rather than refuse, so that a
/// growing list of refusals cannot pass for success. Tune as merging lands: the working tree of
/// 2026-11-29 23:40 answered 705 of the first seed's 742 (the 37 refused were COUNT(DISTINCT),
/// GROUP_CONCAT, statistical aggregates, UNION, WITH ROLLUP, a derived table and an id outside
/// every range); with DISTINCT aggregates and GROUP_CONCAT merged (issue 18, 2026-12-03) it
/// answers 749 of 779 (refused: statistical and bit aggregates, two DISTINCT expression lists
/// in one SELECT, UNION, WITH ROLLUP, a derived table, the id outside every range); HEAD
/// without cross-node merging answered 307.
const MIN_ANSWERED: usize = 715;

/// Query classes the gateway must answer: a refusal of one of them is a failure.
const MUST_ANSWER: &[&str] = &["distinct agg", "digit-led alias", "alias or column"];

/// Failures printed in full at the end.
const MAX_SHOWN: usize = 20;

/// Database prefix of the fixture (`t_diff_db1..3`) and of the reference database
/// (`t_diff_ref`). `MANX_DIFF_PREFIX` changes it so that a long run can go on beside the
/// test suite's own run on the same sandbox.
const PREFIX: &str = "diff";
const SCHEMA: &str = "DIFFDB";
const QUERY_TIMEOUT: Duration = Duration::from_secs(20);

/// Relative tolerance for DOUBLE results (a merged SUM/AVG adds in another order), absolute
/// below 1.
const FLOAT_TOLERANCE: f64 = 1e-9;

/// Query classes whose differences are known divergences: reported in the summary, not failed.
/// Each is a decision to take (fix or document in DECISIONS.md), not a bug of this test.
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[];

const SHARDED: [Sharded; 3] = [
    Sharded {
        name: "d_orders",
        id_type: "INT",
        shard: "id",
    },
    Sharded {
        name: "d_events",
        id_type: "BIGINT",
        shard: "id",
    },
    Sharded {
        name: "d_tags",
        id_type: "INT",
        shard: "code",
    },
];

struct Sharded {
    name: &'static str,
    id_type: &'static str,
    shard: &'static str,
}

fn schema_xml() -> String {
    format!(
        r#"<schema name="{SCHEMA}" checkSQLschema="false">
    <table name="d_orders" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long" />
    <table name="d_events" primaryKey="id" dataNode="dn1,dn2,dn3" rule="auto-sharding-long" />
    <table name="d_tags" primaryKey="id" dataNode="dn1,dn2,dn3" rule="diff-sharding-by-code" />
    <table name="d_cust" primaryKey="id" type="global" dataNode="dn1,dn2,dn3" />
</schema>"#
    )
}

/// The bundled rule.xml plus a string-hash rule on `code` (partitions 0..255 → dn1,
/// 256..511 → dn2, 512..1023 → dn3).
fn rule_xml() -> String {
    let bundled = std::fs::read_to_string(common::repo().join("rule.xml")).unwrap();
    let extra = r#"
	<tableRule name="diff-sharding-by-code">
		<rule>
			<columns>code</columns>
			<algorithm>diff-string-hash</algorithm>
		</rule>
	</tableRule>
	<function name="diff-string-hash" class="io.mycat.route.function.PartitionByString">
		<property name="partitionCount">2,1</property>
		<property name="partitionLength">256,512</property>
		<property name="hashSlice">0:5</property>
	</function>
</mycat:rule>"#;
    assert!(bundled.contains("</mycat:rule>"));
    bundled.replace("</mycat:rule>", extra)
}

fn create_sharded(t: &Sharded) -> String {
    format!(
        "CREATE TABLE {} (
            id {} NOT NULL PRIMARY KEY,
            code VARCHAR(16) NOT NULL,
            cust_id INT NOT NULL,
            grp INT NULL,
            qty INT NULL,
            big BIGINT NULL,
            amount DECIMAL(10,2) NULL,
            score DOUBLE NULL,
            name VARCHAR(32) NULL,
            status VARCHAR(8) NOT NULL,
            created DATE NULL,
            updated DATETIME NULL,
            tag VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
            ubig BIGINT UNSIGNED NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        t.name, t.id_type
    )
}

const CREATE_CUST: &str = "CREATE TABLE d_cust (
    id INT NOT NULL PRIMARY KEY,
    cname VARCHAR(32) NULL,
    region VARCHAR(8) NULL,
    credit DECIMAL(10,2) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";

// ---------------------------------------------------------------------------------------------
// Deterministic randomness.

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    /// True with probability `pct` percent.
    fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn word(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.below(xs.len())]
    }
}

// ---------------------------------------------------------------------------------------------
// Dataset.

/// Names with case variants, accents (equal to their base letter under utf8mb4_general_ci),
/// trailing spaces (equal under PAD SPACE), quotes and backslashes, and the general_ci
/// oddities: ß = s, İ = ı = i, all emoji equal (and after every BMP letter).
const NAMES: &[&str] = &[
    "abc",
    "ABC",
    "Abc",
    "äbc",
    "Äbc",
    "abd",
    "ab",
    "AB",
    "ab ",
    "Zeta",
    "zeta",
    "émile",
    "Emile",
    "EMILE",
    "O'Neil",
    "o'neil",
    "back\\slash",
    "",
    "b",
    "B",
    "ñu",
    "Nu",
    "x-ray",
    "Ωmega",
    "ωMEGA",
    "Straße",
    "strase",
    "İx",
    "ıx",
    "IX",
    "😀",
    "😃",
];
/// Values of the case- and accent-sensitive (utf8mb4_bin) column: no trailing-space variants,
/// since PAD SPACE would make those equal again.
const TAGS: &[&str] = &[
    "abc", "ABC", "Abc", "äbc", "Äbc", "ab", "AB", "Zeta", "zeta", "émile", "Emile", "b", "B", "",
    "😀", "😃", "Straße", "strase",
];
const STATUSES: &[&str] = &["new", "NEW", "paid", "Paid", "sent", "void"];
const CNAMES: &[&str] = &["Acme", "ACME", "acme", "Bäcker", "Backer", "zulu", "Zulu"];
const REGIONS: &[&str] = &["north", "North", "south", "east"];

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

fn nullable(rng: &mut Rng, pct_null: usize, v: impl FnOnce(&mut Rng) -> String) -> String {
    if rng.chance(pct_null) {
        "NULL".to_string()
    } else {
        v(rng)
    }
}

fn date(rng: &mut Rng) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        rng.range(2019, 2024),
        rng.range(1, 12),
        rng.range(1, 28)
    )
}

/// The rows of each table as SQL literals, and the values the query generator draws from.
struct Dataset {
    /// table → rows of literals (in column order of the CREATE TABLE).
    rows: BTreeMap<&'static str, Vec<Vec<String>>>,
    /// table → its ids (and codes for d_tags), for shard conditions.
    ids: BTreeMap<&'static str, Vec<i64>>,
    codes: Vec<String>,
}

fn dataset(rng: &mut Rng) -> Dataset {
    let mut rows = BTreeMap::new();
    let mut ids = BTreeMap::new();
    let mut codes = Vec::new();
    for t in &SHARDED {
        let mut table_ids: Vec<i64> = match t.name {
            "d_orders" => (1..=3000).filter(|_| rng.chance(40)).collect(),
            // Spread over the three 5,000,000-wide ranges, with the boundaries themselves.
            "d_events" => {
                let mut v: Vec<i64> = Vec::new();
                for i in 0..1200 {
                    if rng.chance(70) {
                        v.push(i * 12_500 + rng.range(1, 12_499));
                    }
                }
                v.extend([0, 4_999_999, 5_000_000, 5_000_001, 10_000_000, 14_999_999]);
                v.extend([15_000_000]);
                v.sort();
                v.dedup();
                v
            }
            _ => (1..=600).collect(),
        };
        table_ids.sort();
        let mut table_rows = Vec::new();
        for &id in &table_ids {
            // d_tags is sharded by code: codes there are unique even case-insensitively, since a
            // hash of 'k0001' and of 'K0001' may name different nodes (see the probe below).
            let code = if t.name == "d_tags" {
                let c = format!("{}{:04}", if rng.chance(50) { "K" } else { "k" }, id);
                codes.push(c.clone());
                c
            } else {
                format!(
                    "{}{}",
                    if rng.chance(50) { "K" } else { "k" },
                    rng.below(40)
                )
            };
            let mut r = vec![id.to_string(), quote(&code), rng.range(1, 320).to_string()];
            r.push(nullable(rng, 15, |r| r.range(0, 4).to_string()));
            r.push(nullable(rng, 10, |r| r.range(-50, 50).to_string()));
            r.push(nullable(rng, 10, |r| {
                if r.chance(5) {
                    r.pick(&[i64::MAX / 4, -(i64::MAX / 4), 0]).to_string()
                } else {
                    r.range(-1_000_000_000_000, 1_000_000_000_000).to_string()
                }
            }));
            r.push(nullable(rng, 10, |r| {
                let cents = r.range(-999_999, 9_999_999);
                let sign = if cents < 0 { "-" } else { "" };
                format!("{sign}{}.{:02}", cents.abs() / 100, cents.abs() % 100)
            }));
            r.push(nullable(rng, 10, |r| {
                format!("{:?}", r.range(-100_000, 100_000) as f64 / 7.0)
            }));
            r.push(nullable(rng, 10, |r| quote(r.word(NAMES))));
            r.push(quote(rng.word(STATUSES)));
            r.push(nullable(rng, 10, |r| quote(&date(r))));
            r.push(nullable(rng, 10, |r| {
                quote(&format!(
                    "{} {:02}:{:02}:{:02}",
                    date(r),
                    r.range(0, 23),
                    r.range(0, 59),
                    r.range(0, 59)
                ))
            }));
            r.push(nullable(rng, 10, |r| quote(r.word(TAGS))));
            r.push(nullable(rng, 10, |r| {
                if r.chance(10) {
                    r.word(&["0", "18446744073709551615", "9223372036854775808"])
                        .to_string()
                } else {
                    r.next().to_string()
                }
            }));
            table_rows.push(r);
        }
        rows.insert(t.name, table_rows);
        ids.insert(t.name, table_ids);
    }
    let cust = (1..=300)
        .map(|id| {
            vec![
                id.to_string(),
                nullable(rng, 10, |r| quote(r.word(CNAMES))),
                nullable(rng, 15, |r| quote(r.word(REGIONS))),
                nullable(rng, 10, |r| {
                    format!("{}.{:02}", r.range(0, 50_000), r.range(0, 99))
                }),
            ]
        })
        .collect();
    rows.insert("d_cust", cust);
    Dataset { rows, ids, codes }
}

fn inserts(table: &str, rows: &[Vec<String>]) -> Vec<String> {
    rows.chunks(100)
        .map(|chunk| {
            let values: Vec<String> = chunk
                .iter()
                .map(|r| format!("({})", r.join(", ")))
                .collect();
            let columns = if table == "d_cust" {
                "id, cname, region, credit"
            } else {
                "id, code, cust_id, grp, qty, big, amount, score, name, status, created, updated, tag, ubig"
            };
            format!(
                "INSERT INTO {table} ({columns}) VALUES {}",
                values.join(", ")
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Queries.

/// How the two answers are compared.
#[derive(Clone, Debug)]
enum Check {
    /// The ORDER BY orders the returned rows completely.
    Ordered,
    /// No (complete) order: multisets.
    Unordered,
    /// Multisets, and the sequence of these (selected) order-key columns must be equal.
    KeyOrdered(Vec<usize>),
    /// LIMIT without ORDER BY: `count` rows after `offset` of any order; checked against the
    /// reference's answer to `full` (the query without its LIMIT).
    LimitNoOrder {
        full: String,
        offset: usize,
        count: usize,
    },
}

#[derive(Clone, Debug)]
struct Query {
    class: &'static str,
    sql: String,
    check: Check,
    /// Result columns compared case- and accent-insensitively (a collation may show any
    /// variant of an equal group).
    folded: Vec<usize>,
}

/// A select-list item over the sharded tables' columns; `{p}` is the table alias prefix.
#[derive(Clone, Copy)]
struct Item {
    expr: &'static str,
    alias: Option<&'static str>,
}

const fn col(expr: &'static str) -> Item {
    Item { expr, alias: None }
}

const fn expr(expr: &'static str, alias: &'static str) -> Item {
    Item {
        expr,
        alias: Some(alias),
    }
}

const ITEMS: &[Item] = &[
    col("{p}id"),
    col("{p}code"),
    col("{p}cust_id"),
    col("{p}grp"),
    col("{p}qty"),
    col("{p}big"),
    col("{p}amount"),
    col("{p}score"),
    col("{p}name"),
    col("{p}status"),
    col("{p}created"),
    col("{p}updated"),
    col("{p}tag"),
    col("{p}ubig"),
    expr("{p}qty * 2", "q2"),
    expr("{p}amount + {p}qty", "aq"),
    expr("UPPER({p}name)", "uname"),
    expr("CONCAT({p}status, '/', {p}code)", "sc"),
    expr("COALESCE({p}grp, -1)", "g1"),
    expr("YEAR({p}created)", "y"),
    expr("{p}big DIV 1000", "bk"),
    expr("CHAR_LENGTH({p}name)", "ln"),
];

/// Order keys that are not selected (hidden columns the gateway must add and remove).
const HIDDEN_KEYS: &[&str] = &[
    "{p}qty",
    "{p}name",
    "{p}amount",
    "{p}created",
    "{p}qty * -1",
    "{p}status",
    "{p}grp",
    "{p}tag",
    "{p}ubig",
];

/// Aggregates: (expression, string result, float result, usable as an order key).
const AGGS: &[(&str, bool, bool)] = &[
    ("COUNT(*)", false, false),
    ("COUNT({p}grp)", false, false),
    ("COUNT({p}name)", false, false),
    ("COUNT({p}amount)", false, false),
    ("SUM({p}qty)", false, false),
    ("SUM({p}amount)", false, false),
    ("SUM({p}big)", false, false),
    ("MIN({p}qty)", false, false),
    ("MAX({p}qty)", false, false),
    ("MIN({p}amount)", false, false),
    ("MAX({p}amount)", false, false),
    ("MIN({p}name)", true, false),
    ("MAX({p}name)", true, false),
    ("MIN({p}status)", true, false),
    ("MAX({p}code)", true, false),
    ("MIN({p}created)", false, false),
    ("MAX({p}updated)", false, false),
    ("MIN({p}tag)", false, false),
    ("MAX({p}tag)", false, false),
    ("SUM({p}ubig)", false, false),
    ("MAX({p}ubig)", false, false),
    ("AVG({p}ubig)", false, false),
    ("AVG({p}qty)", false, false),
    ("AVG({p}amount)", false, false),
    ("AVG({p}big)", false, false),
    ("MAX({p}score)", false, true),
    ("SUM({p}score)", false, true),
    ("AVG({p}score)", false, true),
];

/// Aggregates a merging gateway may compute or refuse (never answer wrongly).
const RARE_AGGS: &[(&str, bool, bool)] = &[
    ("COUNT(DISTINCT {p}grp)", false, false),
    ("COUNT(DISTINCT {p}status)", false, false),
    (
        "GROUP_CONCAT(DISTINCT {p}grp ORDER BY {p}grp)",
        false,
        false,
    ),
    ("SUM(DISTINCT {p}qty)", false, false),
    ("STDDEV_POP({p}qty)", false, true),
    ("BIT_OR({p}qty)", false, false),
];

/// Group keys: (expression, alias, string).
const GROUP_KEYS: &[(&str, Option<&str>, bool)] = &[
    ("{p}grp", None, false),
    ("{p}status", None, true),
    ("{p}name", None, true),
    ("{p}cust_id", None, false),
    ("YEAR({p}created)", Some("y"), false),
    ("{p}created", None, false),
    ("{p}code", None, true),
    ("{p}tag", None, false),
    ("COALESCE({p}grp, -1)", Some("g1"), false),
];

struct Gen<'a> {
    rng: Rng,
    data: &'a Dataset,
}

fn p(s: &str, prefix: &str) -> String {
    s.replace("{p}", prefix)
}

impl Gen<'_> {
    fn table(&mut self) -> &'static Sharded {
        &SHARDED[self.rng.below(SHARDED.len())]
    }

    fn some_id(&mut self, t: &Sharded) -> i64 {
        let ids = &self.data.ids[t.name];
        if self.rng.chance(85) {
            ids[self.rng.below(ids.len())]
        } else {
            ids[self.rng.below(ids.len())] + self.rng.range(-3, 3)
        }
    }

    fn some_code(&mut self) -> String {
        if self.rng.chance(90) {
            quote(&self.data.codes[self.rng.below(self.data.codes.len())])
        } else {
            quote(&format!("K{:04}", self.rng.range(700, 800)))
        }
    }

    /// A condition on the sharding column.
    fn shard_cond(&mut self, t: &Sharded, pre: &str) -> String {
        if t.shard == "code" {
            return match self.rng.below(4) {
                0 | 1 => format!("{pre}code = {}", self.some_code()),
                2 => {
                    let n = self.rng.range(2, 5);
                    let list: Vec<String> = (0..n).map(|_| self.some_code()).collect();
                    format!("{pre}code IN ({})", list.join(", "))
                }
                _ => format!(
                    "({pre}code = {} OR {pre}code = {})",
                    self.some_code(),
                    self.some_code()
                ),
            };
        }
        let a = self.some_id(t);
        match self.rng.below(10) {
            0 | 1 => format!("{pre}id = {a}"),
            2 => format!("{pre}id = '{a}'"),
            3 | 4 => {
                let n = self.rng.range(2, 6);
                let list: Vec<String> = (0..n).map(|_| self.some_id(t).to_string()).collect();
                format!("{pre}id IN ({})", list.join(", "))
            }
            5 => {
                let b = self.some_id(t);
                format!("{pre}id BETWEEN {} AND {}", a.min(b), a.max(b))
            }
            6 => format!("{pre}id < {a}"),
            7 => format!("{pre}id >= {a}"),
            8 => format!("({pre}id = {a} OR {pre}id = {})", self.some_id(t)),
            _ => format!(
                "({pre}id = {a} OR {pre}id IN ({}, {}))",
                self.some_id(t),
                self.some_id(t)
            ),
        }
    }

    /// A condition on other columns.
    fn other_cond(&mut self, pre: &str) -> String {
        match self.rng.below(16) {
            14 => format!("{pre}tag = {}", quote(self.rng.word(TAGS))),
            15 => format!("{pre}ubig > {}", self.rng.next()),
            0 => format!("{pre}grp = {}", self.rng.range(0, 4)),
            1 => format!("{pre}grp IS NULL"),
            2 => format!("{pre}qty > {}", self.rng.range(-50, 50)),
            3 => format!(
                "{pre}amount BETWEEN {} AND {}",
                self.rng.range(-5000, 0),
                self.rng.range(0, 60000)
            ),
            4 => format!("{pre}name = {}", quote(self.rng.word(NAMES))),
            5 => format!("{pre}name LIKE 'a%'"),
            6 => format!("{pre}status IN ('new', 'paid')"),
            7 => format!("{pre}created >= '{}'", date(&mut self.rng)),
            8 => format!("{pre}score < {}", self.rng.range(-10000, 10000)),
            9 => format!(
                "{pre}big > {}",
                self.rng.range(-1_000_000_000, 1_000_000_000)
            ),
            10 => format!("{pre}name IS NOT NULL AND {pre}qty <> 0"),
            11 => format!("NOT ({pre}status = 'void')"),
            12 => format!(
                "({pre}grp = {} OR {pre}qty < {})",
                self.rng.range(0, 4),
                self.rng.range(-50, 0)
            ),
            _ => format!("{pre}cust_id <= {}", self.rng.range(1, 320)),
        }
    }

    /// A WHERE clause (maybe empty) for table `t` with column prefix `pre`.
    fn where_clause(&mut self, t: &Sharded, pre: &str) -> String {
        match self.rng.below(20) {
            0..=5 => String::new(),
            6..=12 => format!(" WHERE {}", self.shard_cond(t, pre)),
            13..=16 => format!(" WHERE {}", self.other_cond(pre)),
            17 | 18 => format!(
                " WHERE {} AND {}",
                self.shard_cond(t, pre),
                self.other_cond(pre)
            ),
            _ => format!(
                " WHERE {} OR {}",
                self.shard_cond(t, pre),
                self.other_cond(pre)
            ),
        }
    }

    fn dir(&mut self) -> &'static str {
        self.rng.word(&["", " ASC", " DESC"])
    }

    fn limit(&mut self) -> (usize, usize, String) {
        let count = *self.rng.pick(&[1usize, 3, 5, 10, 50]);
        if self.rng.chance(50) {
            (0, count, format!(" LIMIT {count}"))
        } else {
            let offset = *self.rng.pick(&[0usize, 1, 7, 100, 5000]);
            if self.rng.chance(30) {
                (offset, count, format!(" LIMIT {count} OFFSET {offset}"))
            } else {
                (offset, count, format!(" LIMIT {offset}, {count}"))
            }
        }
    }

    /// Chooses `n` distinct select items.
    fn items(&mut self, n: usize) -> Vec<Item> {
        let mut chosen: Vec<Item> = Vec::new();
        while chosen.len() < n {
            let it = *self.rng.pick(ITEMS);
            if !chosen.iter().any(|c| c.expr == it.expr) {
                chosen.push(it);
            }
        }
        chosen
    }

    /// Select list text; expressions keep their alias most of the time.
    fn select_list(&mut self, items: &[Item], pre: &str) -> (String, Vec<Option<&'static str>>) {
        let mut labels = Vec::new();
        let text: Vec<String> = items
            .iter()
            .map(|it| {
                let e = p(it.expr, pre);
                match it.alias {
                    Some(a) if self.rng.chance(80) => {
                        labels.push(Some(a));
                        format!("{e} AS {a}")
                    }
                    _ => {
                        labels.push(None);
                        e
                    }
                }
            })
            .collect();
        (text.join(", "), labels)
    }

    /// A reference to select item `i` in ORDER BY / GROUP BY: by alias, by position or by the
    /// expression itself.
    fn item_ref(&mut self, items: &[Item], labels: &[Option<&str>], i: usize, pre: &str) -> String {
        match (labels[i], self.rng.below(3)) {
            (_, 0) => (i + 1).to_string(),
            (Some(a), 1) => a.to_string(),
            _ => p(items[i].expr, pre),
        }
    }

    /// Plain SELECT with ORDER BY: completely ordered (ending with the id, maybe hidden, maybe
    /// with LIMIT) or ordered by selected keys only (compared by key sequence).
    fn plain(&mut self) -> Query {
        let t = self.table();
        if self.rng.chance(10) {
            let wh = self.where_clause(t, "");
            let key = p(self.rng.word(HIDDEN_KEYS), "");
            let mut sql = format!(
                "SELECT * FROM {}{wh} ORDER BY {key}{}, id{}",
                t.name,
                self.dir(),
                self.dir()
            );
            sql.push_str(&self.limit().2);
            return Query {
                class: "order+limit",
                sql,
                check: Check::Ordered,
                folded: vec![],
            };
        }
        let n = self.rng.range(1, 5) as usize;
        let items = self.items(n);
        let (list, labels) = self.select_list(&items, "");
        let wh = self.where_clause(t, "");
        let k = self.rng.range(1, 3.min(n as i64)) as usize;
        let mut key_idx: Vec<usize> = Vec::new();
        while key_idx.len() < k {
            let i = self.rng.below(n);
            if !key_idx.contains(&i) {
                key_idx.push(i);
            }
        }
        let mut keys: Vec<String> = key_idx
            .iter()
            .map(|&i| {
                let r = self.item_ref(&items, &labels, i, "");
                format!("{r}{}", self.dir())
            })
            .collect();
        let total = self.rng.chance(65);
        if total {
            if self.rng.chance(30) {
                let h = p(self.rng.word(HIDDEN_KEYS), "");
                keys.insert(0, format!("{h}{}", self.dir()));
            }
            keys.push(format!("id{}", self.dir()));
            let mut sql = format!(
                "SELECT {list} FROM {}{wh} ORDER BY {}",
                t.name,
                keys.join(", ")
            );
            let class = if self.rng.chance(50) {
                sql.push_str(&self.limit().2);
                "order+limit"
            } else {
                "order"
            };
            Query {
                class,
                sql,
                check: Check::Ordered,
                folded: vec![],
            }
        } else {
            Query {
                class: "order (ties)",
                sql: format!(
                    "SELECT {list} FROM {}{wh} ORDER BY {}",
                    t.name,
                    keys.join(", ")
                ),
                check: Check::KeyOrdered(key_idx),
                folded: vec![],
            }
        }
    }

    /// SELECT with only a WHERE (multiset), or SELECT * now and then.
    fn filter(&mut self) -> Query {
        let t = self.table();
        let wh = self.where_clause(t, "");
        let list = if self.rng.chance(25) {
            "*".to_string()
        } else {
            let n = self.rng.range(1, 6) as usize;
            let items = self.items(n);
            self.select_list(&items, "").0
        };
        Query {
            class: "where",
            sql: format!("SELECT {list} FROM {}{wh}", t.name),
            check: Check::Unordered,
            folded: vec![],
        }
    }

    /// LIMIT without ORDER BY: any rows will do.
    fn limit_no_order(&mut self) -> Query {
        let t = self.table();
        let wh = self.where_clause(t, "");
        let n = self.rng.range(1, 4) as usize;
        let items = self.items(n);
        let (list, _) = self.select_list(&items, "");
        let (offset, count, lim) = self.limit();
        let full = format!("SELECT {list} FROM {}{wh}", t.name);
        Query {
            class: "limit (no order)",
            sql: format!("{full}{lim}"),
            check: Check::LimitNoOrder {
                full,
                offset,
                count,
            },
            folded: vec![],
        }
    }

    /// Aggregates: (select-list text, string result, float result, alias or expression to
    /// reference it by).
    fn aggs(&mut self, n: usize, pre: &str) -> Vec<(String, bool, bool, String)> {
        let mut out: Vec<(String, bool, bool, String)> = Vec::new();
        let mut alias_no = 0;
        while out.len() < n {
            let rare = self.rng.chance(7);
            let (e, s, f) = *self.rng.pick(if rare { RARE_AGGS } else { AGGS });
            let e = p(e, pre);
            if out.iter().any(|o| o.0.starts_with(&e)) {
                continue;
            }
            if self.rng.chance(40) {
                alias_no += 1;
                let a = format!("a{alias_no}");
                out.push((format!("{e} AS {a}"), s, f, a));
            } else {
                out.push((e.clone(), s, f, e));
            }
        }
        out
    }

    /// Aggregates without GROUP BY: one row.
    fn aggregate(&mut self) -> Query {
        let t = self.table();
        let n = self.rng.range(1, 4) as usize;
        let aggs = self.aggs(n, "");
        let wh = self.where_clause(t, "");
        let folded = (0..n).filter(|&i| aggs[i].1).collect();
        let list: Vec<&str> = aggs.iter().map(|a| a.0.as_str()).collect();
        Query {
            class: "aggregate",
            sql: format!("SELECT {} FROM {}{wh}", list.join(", "), t.name),
            check: Check::Ordered,
            folded,
        }
    }

    /// GROUP BY with aggregates, maybe HAVING, ORDER BY keys or aggregate, LIMIT.
    fn group(&mut self) -> Query {
        let t = self.table();
        let nk = if self.rng.chance(75) { 1 } else { 2 };
        let mut keys: Vec<(&str, Option<&str>, bool)> = Vec::new();
        while keys.len() < nk {
            let k = *self.rng.pick(GROUP_KEYS);
            if !keys.iter().any(|x| x.0 == k.0) {
                keys.push(k);
            }
        }
        let na = self.rng.range(1, 3) as usize;
        let aggs = self.aggs(na, "");
        let mut select: Vec<String> = Vec::new();
        let mut folded = Vec::new();
        let mut key_refs = Vec::new();
        for (i, (e, alias, s)) in keys.iter().enumerate() {
            let e = p(e, "");
            if *s {
                folded.push(i);
            }
            match alias {
                Some(a) => {
                    select.push(format!("{e} AS {a}"));
                    key_refs.push(match self.rng.below(3) {
                        0 => (i + 1).to_string(),
                        1 => a.to_string(),
                        _ => e,
                    });
                }
                None => {
                    select.push(e.clone());
                    key_refs.push(if self.rng.chance(25) {
                        (i + 1).to_string()
                    } else {
                        e
                    });
                }
            }
        }
        for (j, a) in aggs.iter().enumerate() {
            select.push(a.0.clone());
            if a.1 {
                folded.push(nk + j);
            }
        }
        let wh = self.where_clause(t, "");
        let mut sql = format!(
            "SELECT {} FROM {}{wh} GROUP BY {}",
            select.join(", "),
            t.name,
            key_refs.join(", ")
        );
        if self.rng.chance(25) {
            let h = match self.rng.below(4) {
                0 => format!("COUNT(*) > {}", self.rng.range(1, 20)),
                1 => format!("SUM(qty) > {}", self.rng.range(-20, 40)),
                2 => "MIN(amount) IS NOT NULL".to_string(),
                _ => format!("{} IS NOT NULL", aggs[0].3),
            };
            sql.push_str(&format!(" HAVING {h}"));
        }
        // An aggregate that can order (not a float, not a string).
        let ord_agg = aggs.iter().position(|a| !a.1 && !a.2);
        let floats = aggs.iter().any(|a| a.2);
        let check = match (self.rng.below(5), ord_agg) {
            (0, _) if !floats && self.rng.chance(40) => {
                // LIMIT without ORDER BY: any groups will do, but each one complete.
                let full = sql.clone();
                let (offset, count, lim) = self.limit();
                sql.push_str(&lim);
                return Query {
                    class: "group+limit (no order)",
                    sql,
                    check: Check::LimitNoOrder {
                        full,
                        offset,
                        count,
                    },
                    folded,
                };
            }
            (0, _) => Check::Unordered,
            (4, _) => {
                // Ordered by an aggregate that is not selected (a hidden column).
                let hidden = self.rng.word(&[
                    "SUM(qty)",
                    "COUNT(*)",
                    "MAX(amount)",
                    "AVG(qty)",
                    "MIN(name)",
                ]);
                let ks: Vec<String> = key_refs
                    .iter()
                    .map(|k| format!("{k}{}", self.dir()))
                    .collect();
                sql.push_str(&format!(
                    " ORDER BY {hidden}{}, {}",
                    self.dir(),
                    ks.join(", ")
                ));
                Check::Ordered
            }
            (1, Some(j)) => {
                let r = if self.rng.chance(50) {
                    (nk + j + 1).to_string()
                } else {
                    aggs[j].3.clone()
                };
                if self.rng.chance(50) {
                    sql.push_str(&format!(" ORDER BY {r}{}", self.dir()));
                    Check::KeyOrdered(vec![nk + j])
                } else {
                    let ks: Vec<String> = key_refs
                        .iter()
                        .map(|k| format!("{k}{}", self.dir()))
                        .collect();
                    sql.push_str(&format!(" ORDER BY {r}{}, {}", self.dir(), ks.join(", ")));
                    Check::Ordered
                }
            }
            _ => {
                let ks: Vec<String> = key_refs
                    .iter()
                    .map(|k| format!("{k}{}", self.dir()))
                    .collect();
                sql.push_str(&format!(" ORDER BY {}", ks.join(", ")));
                Check::Ordered
            }
        };
        let class = if matches!(check, Check::Ordered) && self.rng.chance(40) {
            sql.push_str(&self.limit().2);
            "group+limit"
        } else {
            "group"
        };
        Query {
            class,
            sql,
            check,
            folded,
        }
    }

    /// SELECT DISTINCT of 1..3 low-cardinality columns, maybe ordered by all of them.
    fn distinct(&mut self) -> Query {
        const COLS: &[(&str, bool)] = &[
            ("grp", false),
            ("status", true),
            ("name", true),
            ("cust_id", false),
            ("YEAR(created) AS y", false),
            ("qty", false),
            ("code", true),
            ("tag", false),
        ];
        let t = self.table();
        let n = self.rng.range(1, 3) as usize;
        let mut cols: Vec<(&str, bool)> = Vec::new();
        while cols.len() < n {
            let c = *self.rng.pick(COLS);
            if !cols.iter().any(|x| x.0 == c.0) {
                cols.push(c);
            }
        }
        let folded = (0..n).filter(|&i| cols[i].1).collect();
        let list: Vec<&str> = cols.iter().map(|c| c.0).collect();
        let wh = self.where_clause(t, "");
        let mut sql = format!("SELECT DISTINCT {} FROM {}{wh}", list.join(", "), t.name);
        if self.rng.chance(12) {
            let full = sql.clone();
            let (offset, count, lim) = self.limit();
            sql.push_str(&lim);
            return Query {
                class: "distinct+limit (no order)",
                sql,
                check: Check::LimitNoOrder {
                    full,
                    offset,
                    count,
                },
                folded,
            };
        }
        let check = if self.rng.chance(60) {
            let ks: Vec<String> = (0..n)
                .map(|i| {
                    let r = if self.rng.chance(30) {
                        (i + 1).to_string()
                    } else {
                        cols[i].0.rsplit(' ').next().unwrap().to_string()
                    };
                    format!("{r}{}", self.dir())
                })
                .collect();
            sql.push_str(&format!(" ORDER BY {}", ks.join(", ")));
            if self.rng.chance(40) {
                sql.push_str(&self.limit().2);
            }
            Check::Ordered
        } else {
            Check::Unordered
        };
        Query {
            class: "distinct",
            sql,
            check,
            folded,
        }
    }

    /// A sharded table joined with the global table.
    fn join(&mut self) -> Query {
        let t = self.table();
        let kind = if self.rng.chance(25) {
            "LEFT JOIN"
        } else {
            "JOIN"
        };
        let from = format!("{} o {kind} d_cust c ON o.cust_id = c.id", t.name);
        let mut wh = self.where_clause(t, "o.");
        if self.rng.chance(20) {
            let r = quote(self.rng.word(REGIONS));
            wh = if wh.is_empty() {
                format!(" WHERE c.region = {r}")
            } else {
                format!("{wh} AND c.region = {r}")
            };
        }
        if self.rng.chance(35) {
            // Grouped by a global-table column.
            let na = self.rng.range(1, 2) as usize;
            let aggs = self.aggs(na, "o.");
            let list: Vec<&str> = aggs.iter().map(|a| a.0.as_str()).collect();
            let mut folded = vec![0];
            folded.extend((0..aggs.len()).filter(|&j| aggs[j].1).map(|j| j + 1));
            let mut sql = format!(
                "SELECT c.region, {} FROM {from}{wh} GROUP BY c.region",
                list.join(", ")
            );
            let check = if self.rng.chance(50) {
                sql.push_str(&format!(" ORDER BY c.region{}", self.dir()));
                Check::Ordered
            } else {
                Check::Unordered
            };
            return Query {
                class: "join+group",
                sql,
                check,
                folded,
            };
        }
        let n = self.rng.range(1, 3) as usize;
        let items = self.items(n);
        let (list, _) = self.select_list(&items, "o.");
        let cc = *self
            .rng
            .pick(&["c.cname", "c.region", "c.credit", "c.cname, c.credit"]);
        let mut sql = format!("SELECT {list}, {cc} FROM {from}{wh}");
        let check = if self.rng.chance(60) {
            if self.rng.chance(30) {
                let key = self.rng.word(&["c.cname", "c.region", "c.credit"]);
                sql.push_str(&format!(
                    " ORDER BY {key}{}, o.id{}",
                    self.dir(),
                    self.dir()
                ));
            } else {
                sql.push_str(&format!(" ORDER BY o.id{}", self.dir()));
            }
            if self.rng.chance(40) {
                sql.push_str(&self.limit().2);
            }
            Check::Ordered
        } else {
            Check::Unordered
        };
        Query {
            class: "join",
            sql,
            check,
            folded: vec![],
        }
    }

    /// Queries on the global table alone.
    fn global(&mut self) -> Query {
        let wh = match self.rng.below(4) {
            0 => String::new(),
            1 => format!(" WHERE id <= {}", self.rng.range(1, 300)),
            2 => format!(" WHERE region = {}", quote(self.rng.word(REGIONS))),
            _ => " WHERE credit > 1000".to_string(),
        };
        let (sql, check, folded) = match self.rng.below(3) {
            0 => (
                format!("SELECT id, cname, region, credit FROM d_cust{wh} ORDER BY region, id"),
                Check::Ordered,
                vec![],
            ),
            1 => (
                format!(
                    "SELECT region, COUNT(*), SUM(credit), AVG(credit), MIN(cname) FROM d_cust{wh} GROUP BY region ORDER BY region"
                ),
                Check::Ordered,
                vec![0, 4],
            ),
            _ => (
                format!("SELECT DISTINCT cname FROM d_cust{wh}"),
                Check::Unordered,
                vec![0],
            ),
        };
        Query {
            class: "global",
            sql,
            check,
            folded,
        }
    }

    fn generate(&mut self, n: usize) -> Vec<Query> {
        (0..n)
            .map(|_| match self.rng.below(100) {
                0..=17 => self.plain(),
                18..=27 => self.filter(),
                28..=33 => self.limit_no_order(),
                34..=47 => self.aggregate(),
                48..=69 => self.group(),
                70..=79 => self.distinct(),
                80..=95 => self.join(),
                _ => self.global(),
            })
            .collect()
    }
}

/// Hand-written queries where Mycat is known to go wrong, or where the edges are.
fn tricky(data: &Dataset) -> Vec<Query> {
    let qc = |class: &'static str, sql: &str, check: Check, folded: &[usize]| Query {
        class,
        sql: sql.to_string(),
        check,
        folded: folded.to_vec(),
    };
    let q = |sql: &str, check: Check, folded: &[usize]| qc("tricky", sql, check, folded);
    // Routing edges: answered by one node or a few, so they run before any merging exists.
    let r = |sql: &str| qc("routing", sql, Check::Unordered, &[]);
    // A string shard key in another letter case than the stored row: the collation matches
    // it, so the gateway must read every node (it did not once: the route hashed the literal).
    let known = |sql: &str| qc("routing: ci string key", sql, Check::Unordered, &[]);
    let ids = &data.ids["d_orders"];
    let (a, b, c) = (ids[5], ids[6], ids[40]);
    let some = format!("{}, {}, {}, {}", ids[3], ids[100], ids[200], ids[301]);
    let code = quote(&data.codes[10]);
    // A code whose case variant hashes to another dataNode than the row's.
    let flip = |s: &str| -> String {
        s.chars()
            .map(|c| match c {
                'k' => 'K',
                'K' => 'k',
                c => c,
            })
            .collect()
    };
    let crossing = data
        .codes
        .iter()
        .find(|c| string_hash_node(c) != string_hash_node(&flip(c)))
        .expect("some code whose case variant hashes elsewhere");
    let flipped = quote(&flip(crossing));
    let spaced = quote(&format!("{} ", data.codes[11]));
    use Check::*;
    vec![
        // Found by a hunt: groups ordered by a string MAX (its weight must follow the fold),
        // aggregates only in HAVING / ORDER BY (one implicit group), exponents in HAVING.
        q(
            "SELECT grp FROM d_orders GROUP BY grp ORDER BY MAX(name), grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp FROM d_orders GROUP BY grp ORDER BY MIN(name) DESC, grp LIMIT 1, 3",
            Ordered,
            &[],
        ),
        q("SELECT 1 FROM d_orders HAVING COUNT(*) > 0", Unordered, &[]),
        q(
            "SELECT COUNT(*) FROM d_events HAVING COUNT(*) > 0 ORDER BY MAX(id)",
            Unordered,
            &[],
        ),
        q(
            "SELECT grp, COUNT(*) FROM d_orders GROUP BY grp HAVING COUNT(*) > 1e0 ORDER BY grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp, SUM(amount) FROM d_orders GROUP BY grp HAVING SUM(amount) > 1.5E2 OR grp > 2.5e0 ORDER BY grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, name FROM d_orders ORDER BY id LIMIT 100000, 5",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, name FROM d_orders ORDER BY id DESC LIMIT 1190, 50",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, name FROM d_orders ORDER BY name DESC, id LIMIT 3, 7",
            Ordered,
            &[],
        ),
        q("SELECT id FROM d_orders WHERE id < 0", Ordered, &[]),
        q(
            "SELECT id FROM d_orders WHERE id < 0 ORDER BY id LIMIT 5",
            Ordered,
            &[],
        ),
        q(
            "SELECT COUNT(*), COUNT(qty), SUM(qty), AVG(qty), MIN(name), MAX(name) FROM d_orders WHERE id < 0",
            Ordered,
            &[],
        ),
        q(
            "SELECT COUNT(*), SUM(amount), AVG(amount), AVG(qty) FROM d_orders",
            Ordered,
            &[],
        ),
        q(
            "SELECT AVG(amount) FROM d_orders WHERE amount IS NULL",
            Ordered,
            &[],
        ),
        q(
            "SELECT MIN(name), MAX(name), MIN(status), MAX(status) FROM d_orders",
            Ordered,
            &[0, 1, 2, 3],
        ),
        q(
            "SELECT grp, AVG(amount) AS a FROM d_orders GROUP BY grp ORDER BY a DESC, grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp, COUNT(*) FROM d_orders GROUP BY grp",
            Unordered,
            &[],
        ),
        q(
            "SELECT grp, COUNT(*) FROM d_orders GROUP BY grp ORDER BY grp DESC",
            Ordered,
            &[],
        ),
        q(
            "SELECT COUNT(*) AS c FROM d_orders ORDER BY c",
            Ordered,
            &[],
        ),
        q(
            "SELECT name, COUNT(*) AS n FROM d_orders GROUP BY name ORDER BY n DESC, name LIMIT 5",
            Ordered,
            &[0],
        ),
        q(
            "SELECT status, SUM(amount) s FROM d_orders GROUP BY status HAVING s > 0 ORDER BY s",
            KeyOrdered(vec![1]),
            &[0],
        ),
        q("SELECT * FROM d_orders ORDER BY id LIMIT 10", Ordered, &[]),
        q(
            &format!("SELECT * FROM d_orders WHERE id IN ({some})"),
            Unordered,
            &[],
        ),
        q(
            &format!("SELECT * FROM d_orders WHERE id IN ({some}) ORDER BY id DESC"),
            Ordered,
            &[],
        ),
        q(
            "SELECT DISTINCT status FROM d_orders ORDER BY status",
            Ordered,
            &[0],
        ),
        q(
            "SELECT DISTINCT name FROM d_orders ORDER BY name DESC LIMIT 4",
            Ordered,
            &[0],
        ),
        q(
            "SELECT COUNT(DISTINCT status), COUNT(DISTINCT name) FROM d_orders",
            Ordered,
            &[],
        ),
        q(
            "SELECT id FROM d_events WHERE id BETWEEN 4999990 AND 5000010 ORDER BY id",
            Ordered,
            &[],
        ),
        q(
            "SELECT id FROM d_events WHERE id IN (0, 5000000, 10000000, 15000000) ORDER BY id",
            Ordered,
            &[],
        ),
        q(
            "SELECT SUM(big), MIN(big), MAX(big), AVG(big) FROM d_events",
            Ordered,
            &[],
        ),
        q(
            "SELECT created, COUNT(*) FROM d_orders GROUP BY created ORDER BY created LIMIT 5",
            Ordered,
            &[],
        ),
        q(
            "SELECT qty, COUNT(*) FROM d_orders GROUP BY qty ORDER BY qty DESC LIMIT 0, 3",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, amount FROM d_orders ORDER BY amount IS NULL, amount, id LIMIT 10",
            Ordered,
            &[],
        ),
        q(
            "SELECT COUNT(*) FROM d_orders o JOIN d_cust c ON o.cust_id = c.id",
            Ordered,
            &[],
        ),
        q(
            "SELECT c.region, COUNT(*), SUM(o.amount) FROM d_orders o JOIN d_cust c ON o.cust_id = c.id GROUP BY c.region ORDER BY c.region",
            Ordered,
            &[0],
        ),
        q("SELECT 1", Ordered, &[]),
        q("SELECT AVG(score), SUM(score) FROM d_orders", Ordered, &[]),
        q(
            &format!("SELECT * FROM d_tags WHERE code = {code}"),
            Unordered,
            &[],
        ),
        q("SELECT MAX(id), MIN(id) FROM d_orders", Ordered, &[]),
        q(
            "SELECT MIN(updated), MAX(created) FROM d_events",
            Ordered,
            &[],
        ),
        q(
            "SELECT COUNT(*) FROM d_orders GROUP BY grp ORDER BY COUNT(*)",
            KeyOrdered(vec![0]),
            &[],
        ),
        q(
            "SELECT grp g, COUNT(*) FROM d_orders GROUP BY g ORDER BY g DESC",
            Ordered,
            &[],
        ),
        q(
            "SELECT status, COUNT(*) FROM d_orders GROUP BY 1 ORDER BY 1",
            Ordered,
            &[0],
        ),
        q(
            "SELECT name, qty FROM d_orders ORDER BY 1 DESC, 2, id LIMIT 15",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, name FROM d_orders WHERE name = 'abc' ORDER BY id",
            Ordered,
            &[],
        ),
        q("SELECT * FROM d_orders LIMIT 0", Ordered, &[]),
        q(
            "SELECT grp, AVG(qty) FROM d_orders GROUP BY grp HAVING AVG(qty) > 0 ORDER BY grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp, COUNT(*) FROM d_orders GROUP BY grp WITH ROLLUP",
            Unordered,
            &[],
        ),
        q(
            "SELECT name, id FROM d_orders ORDER BY name COLLATE utf8mb4_bin, id LIMIT 20",
            Ordered,
            &[],
        ),
        q(
            "SELECT SUM(qty) / COUNT(qty) AS manual_avg, AVG(qty) FROM d_orders",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp, MAX(name), MIN(code) FROM d_tags GROUP BY grp ORDER BY grp",
            Ordered,
            &[1, 2],
        ),
        q(
            "SELECT id, qty FROM d_orders ORDER BY qty DESC, id DESC LIMIT 3",
            Ordered,
            &[],
        ),
        q("SELECT * FROM d_orders WHERE id = -1", Ordered, &[]),
        // An alias that shadows a column: ORDER BY means the alias (MySQL looks at the select
        // list first).
        q(
            "SELECT id, qty AS amount FROM d_orders ORDER BY amount, id LIMIT 20",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, -qty AS qty FROM d_orders ORDER BY qty DESC, id LIMIT 20",
            Ordered,
            &[],
        ),
        q(
            "SELECT t.id, t.qty FROM d_orders t ORDER BY t.qty, t.id LIMIT 5, 10",
            Ordered,
            &[],
        ),
        q(
            "SELECT id, qty FROM d_orders ORDER BY d_orders.qty DESC, d_orders.id LIMIT 12",
            Ordered,
            &[],
        ),
        // Labels as written.
        q(
            "SELECT count(*), Sum(qty), avg( amount ), MAX(qty)+0 FROM d_orders",
            Ordered,
            &[],
        ),
        q("SELECT COUNT(*) FROM d_orders LIMIT 1, 1", Ordered, &[]),
        q(
            "SELECT COUNT(*) AS n, grp FROM d_orders GROUP BY grp ORDER BY n, grp LIMIT 2 OFFSET 1",
            Ordered,
            &[],
        ),
        q(
            "SELECT grp, COUNT(*) FROM d_orders GROUP BY grp ORDER BY SUM(amount) DESC, grp",
            Ordered,
            &[],
        ),
        q(
            "SELECT status, AVG(amount) FROM d_orders GROUP BY status ORDER BY AVG(amount)",
            KeyOrdered(vec![1]),
            &[0],
        ),
        q(
            "SELECT name, id FROM d_orders ORDER BY name, id DESC LIMIT 40",
            Ordered,
            &[],
        ),
        q(
            "SELECT MIN(name) AS lo, MAX(name) AS hi FROM d_orders WHERE name LIKE 'e%'",
            Ordered,
            &[0, 1],
        ),
        q(
            &format!(
                "SELECT id FROM d_orders WHERE id = {a} UNION SELECT id FROM d_orders WHERE id = {b}"
            ),
            Unordered,
            &[],
        ),
        q(
            "SELECT id FROM d_orders WHERE id < 100 UNION ALL SELECT id FROM d_events WHERE id < 100000",
            Unordered,
            &[],
        ),
        q(
            "SELECT x.id FROM (SELECT id FROM d_orders WHERE qty > 40) x",
            Unordered,
            &[],
        ),
        q(
            "SELECT id FROM d_orders WHERE cust_id IN (SELECT id FROM d_cust WHERE region = 'east')",
            Unordered,
            &[],
        ),
        known(&format!(
            "SELECT id, code FROM d_tags WHERE code = {flipped}"
        )),
        known(&format!(
            "SELECT id, code FROM d_tags WHERE code IN ({code}, {flipped})"
        )),
        known(&format!(
            "SELECT id, code FROM d_tags WHERE code = {code} OR code = {flipped}"
        )),
        r(&format!(
            "SELECT id, code FROM d_tags WHERE code = {spaced}"
        )),
        r(&format!(
            "SELECT id FROM d_orders WHERE id = {a} AND id = {b}"
        )),
        r(&format!(
            "SELECT id FROM d_orders WHERE id IN ({a}, {b}) AND id IN ({b}, {c})"
        )),
        r(&format!("SELECT id FROM d_orders WHERE id = '{a:05}'")),
        r(&format!("SELECT id FROM d_orders WHERE {a} = id")),
        r(&format!("SELECT id FROM d_orders WHERE (id) = {a}")),
        r(&format!(
            "SELECT id FROM d_orders WHERE id = {a} OR name = 'abc'"
        )),
        r(&format!("SELECT id FROM d_orders WHERE NOT id = {a}")),
        r(&format!(
            "SELECT id FROM d_orders WHERE id <> {a} AND id < {c}"
        )),
        r(&format!("SELECT id FROM d_orders WHERE id = {a} + 1")),
        r(&format!(
            "SELECT id FROM d_orders WHERE id = {a} /* id = {b} */"
        )),
        r(&format!("SELECT id FROM `d_orders` WHERE `id` = {a}")),
        r(&format!("SELECT id FROM D_ORDERS WHERE ID = {a}")),
        r(&format!(
            "SELECT t.id FROM d_orders t WHERE t.id IN ({a}, {b}, {c})"
        )),
        r(&format!(
            "SELECT id FROM d_orders WHERE id IN ({a}) OR id BETWEEN {b} AND {c}"
        )),
        r("SELECT id FROM d_orders WHERE id IS NULL"),
        r(&format!(
            "SELECT id FROM d_orders WHERE id BETWEEN {c} AND {a}"
        )),
        r("SELECT id FROM d_events WHERE id BETWEEN 4999999 AND 5000001"),
        r("SELECT id FROM d_events WHERE id BETWEEN 5000000 AND 4999999"),
        r("SELECT id FROM d_events WHERE id >= 14999999"),
        r("SELECT id FROM d_events WHERE id = 15000001"),
        r("SELECT id FROM d_events WHERE id = '10000000'"),
        r("SELECT id, name FROM d_orders WHERE name = 'O''Neil' OR name = 'back\\\\slash'"),
        r("SELECT id, name FROM d_orders WHERE name = 'ABC' AND id < 500"),
        r(&format!(
            "SELECT o.id, c.cname FROM d_orders o JOIN d_cust c ON o.cust_id = c.id WHERE o.id = {a}"
        )),
        r(&format!(
            "SELECT o.id, c.cname FROM d_cust c JOIN d_orders o ON o.cust_id = c.id WHERE o.id IN ({a}, {b})"
        )),
        q(
            "SELECT status, COUNT(*) FROM d_orders WHERE id < 0 GROUP BY status",
            Unordered,
            &[],
        ),
        // Issue 18: DISTINCT aggregates and GROUP_CONCAT, merged from the nodes' distinct
        // values (NULLs, values on several nodes, case and accent variants of names).
        d("SELECT COUNT(DISTINCT name) FROM d_orders", Ordered, &[]),
        d("SELECT COUNT(DISTINCT name), COUNT(DISTINCT name, grp) FROM d_orders", Ordered, &[])
            .refusable(),
        d("SELECT COUNT(DISTINCT grp, name), COUNT(*), SUM(qty), MIN(name), AVG(amount) FROM d_orders", Ordered, &[3]),
        d("SELECT COUNT(DISTINCT status), SUM(DISTINCT LENGTH(status)) FROM d_tags", Ordered, &[])
            .refusable(),
        d("SELECT SUM(DISTINCT amount), AVG(DISTINCT amount), COUNT(DISTINCT amount) FROM d_orders", Ordered, &[]),
        d("SELECT SUM(DISTINCT qty), AVG(DISTINCT qty), MAX(DISTINCT qty) FROM d_events", Ordered, &[]),
        d("SELECT SUM(DISTINCT score), AVG(DISTINCT score), COUNT(DISTINCT score) FROM d_orders", Ordered, &[]),
        d("SELECT SUM(DISTINCT ubig), AVG(DISTINCT big) FROM d_orders", Ordered, &[]).refusable(),
        d("SELECT SUM(DISTINCT ubig), COUNT(DISTINCT ubig) FROM d_orders", Ordered, &[]),
        d("SELECT COUNT(DISTINCT tag) FROM d_tags", Ordered, &[]),
        d("SELECT COUNT(DISTINCT created), COUNT(DISTINCT created, updated) FROM d_events", Ordered, &[])
            .refusable(),
        d("SELECT COUNT(DISTINCT updated) FROM d_events", Ordered, &[]),
        d("SELECT COUNT(DISTINCT code) FROM d_tags", Ordered, &[]),
        d("SELECT grp, COUNT(DISTINCT name) AS n, COUNT(*) FROM d_orders GROUP BY grp ORDER BY grp", Ordered, &[]),
        d("SELECT status, COUNT(DISTINCT qty), SUM(DISTINCT qty), AVG(DISTINCT qty) FROM d_orders GROUP BY status ORDER BY status DESC", Ordered, &[0]),
        d("SELECT status, COUNT(DISTINCT grp) AS n FROM d_orders GROUP BY status HAVING n > 2 ORDER BY n DESC, status LIMIT 3", Ordered, &[0]),
        d("SELECT grp, COUNT(DISTINCT name) FROM d_orders GROUP BY grp HAVING COUNT(DISTINCT name) > 1 AND SUM(qty) > 0 ORDER BY COUNT(DISTINCT name), grp LIMIT 2, 4", Ordered, &[]),
        d("SELECT YEAR(created) AS y, COUNT(DISTINCT cust_id) FROM d_events GROUP BY y ORDER BY y", Ordered, &[]),
        d("SELECT name, COUNT(DISTINCT status) FROM d_orders GROUP BY name ORDER BY name", Ordered, &[0]),
        d("SELECT code, COUNT(DISTINCT grp) FROM d_tags GROUP BY code ORDER BY code", Ordered, &[0]),
        d("SELECT COUNT(DISTINCT name) FROM d_orders WHERE id < 0", Ordered, &[]),
        // A constant: the nodes group by its alias, not by select-list position 1 (was 1056).
        d("SELECT COUNT(DISTINCT 1) FROM d_orders", Ordered, &[]),
        d("SELECT COUNT(DISTINCT 1) FROM d_orders WHERE id < 0", Ordered, &[]),
        d("SELECT grp, COUNT(DISTINCT (2)), GROUP_CONCAT(-1) FROM d_orders GROUP BY grp ORDER BY grp", Ordered, &[]),
        d("SELECT COUNT(DISTINCT name), SUM(DISTINCT qty), GROUP_CONCAT(DISTINCT name ORDER BY name) FROM d_orders WHERE id < 0", Ordered, &[])
            .refusable(),
        d("SELECT grp, COUNT(DISTINCT name) FROM d_orders WHERE id < 0 GROUP BY grp", Ordered, &[]),
        d("SELECT grp, GROUP_CONCAT(qty ORDER BY qty DESC SEPARATOR '|') FROM d_orders GROUP BY grp ORDER BY grp", Ordered, &[]),
        d("SELECT grp, GROUP_CONCAT(id ORDER BY id) AS ids, COUNT(*) FROM d_events GROUP BY grp ORDER BY grp", Ordered, &[]),
        d("SELECT GROUP_CONCAT(DISTINCT grp ORDER BY grp) FROM d_orders", Ordered, &[]),
        d("SELECT GROUP_CONCAT(DISTINCT status ORDER BY status DESC SEPARATOR ''), COUNT(DISTINCT status) FROM d_orders", Ordered, &[0]),
        // (RTRIM: the test folds a string's end only, and 'ab ' / 'AB' are one value.)
        d("SELECT status, GROUP_CONCAT(DISTINCT RTRIM(name) ORDER BY RTRIM(name)) FROM d_orders GROUP BY status ORDER BY status", Ordered, &[0, 1]),
        d("SELECT status, COUNT(DISTINCT grp), MAX(name), MIN(grp) FROM d_orders GROUP BY status ORDER BY status", Ordered, &[0, 2]),
        d("SELECT GROUP_CONCAT(DISTINCT grp, '-', qty ORDER BY grp, qty) FROM d_tags", Ordered, &[]),
        d("SELECT GROUP_CONCAT(DISTINCT amount ORDER BY amount) FROM d_events WHERE id < 0", Ordered, &[]),
        // Found by a hunt: an alias of digits then `e` (one name to MariaDB) as a merged key;
        // the nodes' extra columns took `id AS 1` for the expression.
        qc("digit-led alias", "SELECT id AS 1Ea FROM d_orders ORDER BY 1Ea", Ordered, &[]),
        qc("digit-led alias", "SELECT id 1E, name FROM d_events ORDER BY 1E DESC LIMIT 5", Ordered, &[]),
        qc("digit-led alias", "SELECT grp AS 1Eg, COUNT(*) FROM d_orders GROUP BY 1Eg ORDER BY 1Eg", Ordered, &[]),
        qc("digit-led alias", "SELECT status 1Es, COUNT(*) AS n, MAX(qty) FROM d_orders GROUP BY 1Es ORDER BY 1Es DESC", Ordered, &[0]),
        // Found by a hunt: a GROUP BY / HAVING name that is a select alias and a column of one
        // FROM table is the column to MariaDB (ORDER BY: the alias); the merge grouped by the
        // alias. In two tables (`id`), the alias.
        qc("alias or column", "SELECT grp DIV 2 AS grp, COUNT(*), SUM(qty) FROM d_orders GROUP BY grp", Unordered, &[]),
        qc("alias or column", "SELECT grp DIV 2 AS grp, COUNT(*) FROM d_events GROUP BY grp HAVING grp > 2", Unordered, &[]),
        qc("alias or column", "SELECT SUM(qty) AS grp, COUNT(*) FROM d_orders GROUP BY grp", Unordered, &[]),
        qc("alias or column", "SELECT -grp AS grp, COUNT(*) FROM d_tags GROUP BY grp ORDER BY grp", Ordered, &[]),
        qc("alias or column", "SELECT -id AS id, qty FROM d_orders GROUP BY id LIMIT 5", Ordered, &[]),
        qc("alias or column", "SELECT MIN(o.grp) AS cname, COUNT(*) FROM d_orders o JOIN d_cust c ON c.id = o.cust_id GROUP BY cname", Unordered, &[]),
        qc("alias or column", "SELECT o.grp DIV 2 AS id, COUNT(*) FROM d_orders o JOIN d_cust c ON c.id = o.cust_id GROUP BY id", Unordered, &[]),
        qc("alias or column", "SELECT qty DIV 3 AS q3, COUNT(*) FROM d_orders GROUP BY q3 HAVING q3 > 1", Unordered, &[]),
    ]
}

/// A differential query of class "distinct agg" (issue 18).
fn d(sql: &str, check: Check, folded: &[usize]) -> Query {
    Query {
        class: "distinct agg",
        sql: sql.to_string(),
        check,
        folded: folded.to_vec(),
    }
}

impl Query {
    /// The gateway may refuse it by name (two DISTINCT expression lists, or a column type the
    /// merge does not compare): counted as refused in class "distinct agg (refusable)", whose
    /// refusals are not failures; every other query of class "distinct agg" must be answered.
    fn refusable(mut self) -> Query {
        self.class = "distinct agg (refusable)";
        self
    }
}

/// The dataNode index (0-based) `diff-string-hash` gives `s`: Mycat's `StringUtil.hash` of the
/// first 5 UTF-16 units (`h = 31 * h + unit`, 64-bit), `& 1023`, then the 256/256/512 segments.
fn string_hash_node(s: &str) -> usize {
    let h = s
        .encode_utf16()
        .take(5)
        .fold(0i64, |h, u| h.wrapping_mul(31).wrapping_add(i64::from(u)));
    match h & 1023 {
        0..=255 => 0,
        256..=511 => 1,
        _ => 2,
    }
}

// ---------------------------------------------------------------------------------------------
// Running and comparing.

type Cell = Option<String>;

/// The result column metadata that must be the backend's (issue 4): label, type, length,
/// decimals and character set.
#[derive(Debug, Clone, PartialEq)]
struct ColumnMeta {
    name: String,
    ty: ColumnType,
    length: u32,
    decimals: u8,
    charset: u16,
}

struct Answer {
    columns: Vec<ColumnMeta>,
    rows: Vec<Vec<Cell>>,
}

async fn run(conn: &mut Conn, sql: &str) -> Result<Answer, String> {
    let fut = async {
        let r = conn.query_iter(sql).await?;
        let columns = r
            .columns_ref()
            .iter()
            .map(|c| ColumnMeta {
                name: c.name_str().into_owned(),
                ty: c.column_type(),
                length: c.column_length(),
                decimals: c.decimals(),
                charset: c.character_set(),
            })
            .collect();
        let rows: Vec<Row> = r.collect_and_drop().await?;
        Ok::<_, mysql_async::Error>(Answer {
            columns,
            rows: rows.into_iter().map(cells).collect(),
        })
    };
    match tokio::time::timeout(QUERY_TIMEOUT, fut).await {
        Err(_) => Err(format!("timed out after {QUERY_TIMEOUT:?}")),
        Ok(Err(mysql_async::Error::Server(e))) => {
            Err(format!("ERROR {} ({}): {}", e.code, e.state, e.message))
        }
        Ok(Err(e)) => Err(format!("client error: {e}")),
        Ok(Ok(a)) => Ok(a),
    }
}

fn cells(row: Row) -> Vec<Cell> {
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            Value::NULL => None,
            Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            other => Some(format!("{other:?}")),
        })
        .collect()
}

/// Whether a gateway error is a refusal (allowed) rather than a failure.
fn refusal(err: &str) -> bool {
    err.starts_with("ERROR 1064 ")
        || err.starts_with("ERROR 1235 ")
        || err.to_lowercase().contains("not supported")
}

/// A refusal message without the parts that vary per query (dataNode lists, table names).
fn refusal_reason(err: &str) -> String {
    let mut s = String::new();
    let mut rest = err;
    while let Some(i) = rest.find("(dn") {
        s.push_str(&rest[..i]);
        s.push_str("(…)");
        rest = rest[i..].find(')').map_or("", |j| &rest[i + j + 1..]);
    }
    s.push_str(rest);
    for t in ["d_orders", "d_events", "d_tags", "d_cust"] {
        s = s.replace(t, "<table>");
    }
    s
}

/// Case, accent and trailing-space folding: equal under utf8mb4_general_ci for the strings
/// the dataset holds.
fn fold(s: &str) -> String {
    s.trim_end_matches(' ')
        .chars()
        .flat_map(|c| match c {
            // utf8mb4_general_ci: dotted and dotless i are i, ß is s, µ is μ, and every
            // character outside the BMP weighs the same (U+FFFD).
            'İ' | 'ı' => 'i'.to_lowercase(),
            'ß' => 's'.to_lowercase(),
            'µ' => 'μ'.to_lowercase(),
            c if u32::from(c) > 0xFFFF => '\u{FFFD}'.to_lowercase(),
            c => c.to_lowercase(),
        })
        .map(|c| match c {
            'ä' | 'á' | 'à' | 'â' | 'å' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'ñ' => 'n',
            'ö' | 'ó' => 'o',
            'ü' | 'ú' => 'u',
            c => c,
        })
        .collect()
}

fn is_float(t: ColumnType) -> bool {
    matches!(
        t,
        ColumnType::MYSQL_TYPE_DOUBLE | ColumnType::MYSQL_TYPE_FLOAT
    )
}

/// The comparable form of a row: folded strings where asked, floats rounded for sorting.
fn normalize(row: &[Cell], folded: &[usize], floats: &[bool], for_sort: bool) -> Vec<Cell> {
    row.iter()
        .enumerate()
        .map(|(i, c)| {
            c.as_ref().map(|s| {
                if folded.contains(&i) {
                    fold(s)
                } else if for_sort && floats.get(i).copied().unwrap_or(false) {
                    s.parse::<f64>()
                        .map(|f| format!("{f:.9e}"))
                        .unwrap_or_else(|_| s.clone())
                } else {
                    s.clone()
                }
            })
        })
        .collect()
}

fn cell_eq(a: &Cell, b: &Cell, float: bool) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if x != y && float => match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= FLOAT_TOLERANCE * x.abs().max(y.abs()).max(1.0),
            _ => false,
        },
        _ => a == b,
    }
}

fn rows_eq(a: &[Vec<Cell>], b: &[Vec<Cell>], floats: &[bool]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| {
        x.len() != y.len()
            || x.iter()
                .zip(y)
                .enumerate()
                .any(|(i, (c, d))| !cell_eq(c, d, floats.get(i).copied().unwrap_or(false)))
    })
}

fn show_rows(rows: &[Vec<Cell>]) -> String {
    let mut s = format!("{} rows", rows.len());
    for r in rows.iter().take(8) {
        let cells: Vec<String> = r
            .iter()
            .map(|c| c.as_ref().map_or("NULL".to_string(), |v| format!("{v:?}")))
            .collect();
        let _ = write!(s, "\n      ({})", cells.join(", "));
    }
    if rows.len() > 8 {
        s.push_str("\n      …");
    }
    s
}

/// Compares the gateway's answer with the reference's; `full` is the reference's answer to the
/// unlimited query for [`Check::LimitNoOrder`].
fn compare(q: &Query, gw: &Answer, rf: &Answer, full: Option<&Answer>) -> Result<(), String> {
    if gw.columns != rf.columns {
        let mut why = format!(
            "columns differ ({} through the gateway, {} on the reference):",
            gw.columns.len(),
            rf.columns.len()
        );
        for i in 0..gw.columns.len().max(rf.columns.len()) {
            let (g, r) = (gw.columns.get(i), rf.columns.get(i));
            if g != r {
                let _ = write!(
                    why,
                    "\n    column {}: gateway {g:?}\n              reference {r:?}",
                    i + 1
                );
            }
        }
        return Err(why);
    }
    let floats: Vec<bool> = rf.columns.iter().map(|c| is_float(c.ty)).collect();
    let norm = |rows: &[Vec<Cell>], sort: bool| -> Vec<Vec<Cell>> {
        let mut v: Vec<Vec<Cell>> = rows
            .iter()
            .map(|r| normalize(r, &q.folded, &floats, sort))
            .collect();
        if sort {
            v.sort();
        }
        v
    };
    let differ = |what: &str, g: &[Vec<Cell>], r: &[Vec<Cell>], at: usize| {
        format!(
            "{what} differ (first at row {at}):\n    gateway:   {}\n    reference: {}",
            show_rows(g),
            show_rows(r)
        )
    };
    match &q.check {
        Check::Ordered => {
            let (g, r) = (norm(&gw.rows, false), norm(&rf.rows, false));
            match rows_eq(&g, &r, &floats) {
                None => Ok(()),
                Some(at) => Err(differ("ordered rows", &gw.rows, &rf.rows, at)),
            }
        }
        Check::Unordered | Check::KeyOrdered(_) => {
            let (g, r) = (norm(&gw.rows, true), norm(&rf.rows, true));
            if let Some(at) = rows_eq(&g, &r, &floats) {
                return Err(differ("row multisets", &g, &r, at));
            }
            if let Check::KeyOrdered(keys) = &q.check {
                let project = |rows: &[Vec<Cell>]| -> Vec<Vec<Cell>> {
                    rows.iter()
                        .map(|row| {
                            keys.iter()
                                .map(|&k| row[k].as_ref().map(|s| fold(s)))
                                .collect()
                        })
                        .collect()
                };
                let (g, r) = (project(&gw.rows), project(&rf.rows));
                if let Some(at) = rows_eq(&g, &r, &[]) {
                    return Err(differ("order-key sequences", &g, &r, at));
                }
            }
            Ok(())
        }
        Check::LimitNoOrder { offset, count, .. } => {
            let full = full.expect("reference answer to the unlimited query");
            let expected = (*count).min(full.rows.len().saturating_sub(*offset));
            if gw.rows.len() != expected {
                return Err(format!(
                    "LIMIT without ORDER BY: gateway returned {} rows, expected {expected} (reference has {} without LIMIT)\n    gateway:   {}",
                    gw.rows.len(),
                    full.rows.len(),
                    show_rows(&gw.rows)
                ));
            }
            let mut pool: BTreeMap<Vec<Cell>, usize> = BTreeMap::new();
            for r in norm(&full.rows, true) {
                *pool.entry(r).or_default() += 1;
            }
            for r in norm(&gw.rows, true) {
                match pool.get_mut(&r) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => {
                        return Err(format!(
                            "LIMIT without ORDER BY: gateway row {r:?} is not (or not that often) in the reference's full answer"
                        ));
                    }
                }
            }
            Ok(())
        }
    }
}

#[derive(Default)]
struct ClassStats {
    total: usize,
    equal: usize,
    refused: usize,
    failed: usize,
    known: usize,
}

#[derive(Default)]
struct Outcome {
    classes: BTreeMap<&'static str, ClassStats>,
    refused: BTreeMap<String, (usize, String)>,
    failures: Vec<String>,
    known: Vec<String>,
}

impl Outcome {
    fn answered(&self) -> usize {
        self.classes.values().map(|c| c.total - c.refused).sum()
    }
    fn equal(&self) -> usize {
        self.classes.values().map(|c| c.equal).sum()
    }
    fn total(&self) -> usize {
        self.classes.values().map(|c| c.total).sum()
    }
}

struct Conns {
    port: u16,
    gw: Conn,
    rf: Conn,
}

impl Conns {
    async fn reconnect_gateway(&mut self) {
        self.gw = gateway_conn(self.port).await;
    }
}

async fn gateway_conn(port: u16) -> Conn {
    Conn::new(opts(port, "diff", "diff", Some(SCHEMA)))
        .await
        .expect("connect to the gateway as diff")
}

async fn check_query(c: &mut Conns, q: &Query, out: &mut Outcome) {
    let stats = out.classes.entry(q.class).or_default();
    stats.total += 1;
    let reference = run(&mut c.rf, &q.sql).await;
    let gateway = run(&mut c.gw, &q.sql).await;
    let rf = match reference {
        Ok(a) => a,
        Err(e) => {
            // The generator wrote something MariaDB itself rejects: a bug of this test.
            stats.failed += 1;
            out.failures
                .push(format!("{}\n  reference database error: {e}", q.sql));
            return;
        }
    };
    let gw = match gateway {
        Ok(a) => a,
        Err(e) if refusal(&e) && !MUST_ANSWER.contains(&q.class) => {
            stats.refused += 1;
            let entry = out
                .refused
                .entry(refusal_reason(&e))
                .or_insert((0, q.sql.clone()));
            entry.0 += 1;
            return;
        }
        Err(e) => {
            stats.failed += 1;
            out.failures
                .push(format!("{}\n  gateway error: {e}", q.sql));
            if e.starts_with("client error") || e.starts_with("timed out") {
                c.reconnect_gateway().await;
            }
            return;
        }
    };
    let full = match &q.check {
        Check::LimitNoOrder { full, .. } => match run(&mut c.rf, full).await {
            Ok(a) => Some(a),
            Err(e) => {
                stats.failed += 1;
                out.failures
                    .push(format!("{full}\n  reference database error: {e}"));
                return;
            }
        },
        _ => None,
    };
    match compare(q, &gw, &rf, full.as_ref()) {
        Ok(()) => stats.equal += 1,
        Err(why) => {
            let report = format!("{}\n  [{:?}] {why}", q.sql, q.check);
            match KNOWN_DIVERGENCES.iter().find(|k| k.0 == q.class) {
                Some((_, reason)) => {
                    stats.known += 1;
                    out.known.push(format!("{report}\n  known: {reason}"));
                }
                None => {
                    stats.failed += 1;
                    out.failures.push(report);
                }
            }
        }
    }
}

fn seeds() -> Vec<u64> {
    let Ok(list) = std::env::var("MANX_DIFF_SEEDS") else {
        return SEEDS[..1].to_vec();
    };
    let mut out = Vec::new();
    for x in list.split(',').map(str::trim) {
        if x == "all" {
            out.extend_from_slice(SEEDS);
            continue;
        }
        let n = match x.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => x.parse(),
        };
        out.push(n.unwrap_or_else(|e| {
            panic!("MANX_DIFF_SEEDS: `all` or numbers, comma-separated; {x:?}: {e}")
        }));
    }
    out
}

/// Hint for a load failure such as "table doesn't exist" right after CREATE TABLE.
const CONCURRENT: &str = "\n(is another run of this test using the same sandbox databases? \
     MANX_DIFF_PREFIX=<other> gives this run its own)";

/// Creates the tables on the gateway (which runs the DDL on every dataNode) and in the
/// reference database, and loads the same rows into both.
async fn load(c: &mut Conns, f: &Fixture, data: &Dataset) {
    let tables: Vec<(&str, String)> = SHARDED
        .iter()
        .map(|t| (t.name, create_sharded(t)))
        .chain([("d_cust", CREATE_CUST.to_string())])
        .collect();
    for (name, ddl) in &tables {
        for conn in [&mut c.gw, &mut c.rf] {
            conn.query_drop(format!("DROP TABLE IF EXISTS {name}"))
                .await
                .unwrap_or_else(|e| panic!("DROP TABLE {name}: {e}{CONCURRENT}"));
            conn.query_drop(ddl)
                .await
                .unwrap_or_else(|e| panic!("{ddl}: {e}{CONCURRENT}"));
        }
        for stmt in inserts(name, &data.rows[name]) {
            c.gw.query_drop(&stmt).await.unwrap_or_else(|e| {
                panic!("insert through the gateway into {name}: {e}{CONCURRENT}")
            });
            c.rf.query_drop(&stmt)
                .await
                .unwrap_or_else(|e| panic!("insert into the reference {name}: {e}{CONCURRENT}"));
        }
    }
    // The data really is spread: every sharded table has rows on every node, the global table
    // all its rows on each, and the nodes together hold exactly the rows.
    for (name, _) in &tables {
        let mut sum = 0;
        for n in 1..=3 {
            let mut b = f.backend(n).await;
            let k: i64 = b
                .query_first(format!("SELECT COUNT(*) FROM {name}"))
                .await
                .unwrap()
                .unwrap();
            assert!(k > 0, "{name} has no rows on dn{n}");
            if *name == "d_cust" {
                assert_eq!(k as usize, data.rows[name].len(), "global {name} on dn{n}");
            } else {
                sum += k;
            }
        }
        if *name != "d_cust" {
            assert_eq!(
                sum as usize,
                data.rows[name].len(),
                "{name} rows over the nodes"
            );
        }
    }
    // d_tags rows sit where the string hash this file mirrors says (so the probe of the known
    // divergence really picks a code whose case variant routes elsewhere).
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        let codes: Vec<String> = b.query("SELECT code FROM d_tags").await.unwrap();
        for code in codes {
            assert_eq!(
                string_hash_node(&code),
                n - 1,
                "d_tags code {code} on dn{n}"
            );
        }
    }
}

/// With `MANX_DIFF_ORACLE_CHECK=1` a second unsharded copy of the rows answers instead of the
/// gateway: MyISAM, loaded in another order, so ties and the representatives of case-variant
/// groups come out differently than in the reference. Every query must then be equal; a failure
/// is a bug of this file (an order claimed complete that is not, a column that needs folding).
async fn shuffled_copy(data: &Dataset, db: &str) -> Conn {
    common::fresh_database(db).await;
    let mut copy = primary(Some(db)).await;
    let tables = SHARDED
        .iter()
        .map(|t| (t.name, create_sharded(t)))
        .chain([("d_cust", CREATE_CUST.to_string())]);
    for (name, ddl) in tables {
        copy.query_drop(ddl.replace("ENGINE=InnoDB", "ENGINE=MyISAM"))
            .await
            .unwrap();
        // Odd positions backwards, then even positions backwards.
        let rows = &data.rows[name];
        let order: Vec<Vec<String>> = (0..rows.len())
            .rev()
            .filter(|i| i % 2 == 1)
            .chain((0..rows.len()).rev().filter(|i| i % 2 == 0))
            .map(|i| rows[i].clone())
            .collect();
        for stmt in inserts(name, &order) {
            copy.query_drop(stmt).await.unwrap();
        }
    }
    copy
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_answers_equal_unsharded_answers() {
    let started = Instant::now();
    let prefix = std::env::var("MANX_DIFF_PREFIX").unwrap_or_else(|_| PREFIX.to_string());
    let ref_db = format!("t_{prefix}_ref");
    let f = Fixture::start(
        &prefix,
        Extra {
            schema_xml: schema_xml(),
            users_xml: format!(
                r#"<user name="diff"><property name="password">diff</property><property name="schemas">{SCHEMA}</property></user>"#
            ),
            files: vec![("rule.xml".to_string(), rule_xml())],
        },
    )
    .await;
    common::fresh_database(&ref_db).await;
    let mut c = Conns {
        port: f.port,
        gw: gateway_conn(f.port).await,
        rf: primary(Some(&ref_db)).await,
    };
    let queries_per_seed: usize = std::env::var("MANX_DIFF_QUERIES")
        .ok()
        .map(|s| s.parse().expect("MANX_DIFF_QUERIES: a number"))
        .unwrap_or(GENERATED_QUERIES);

    let oracle_check = std::env::var_os("MANX_DIFF_ORACLE_CHECK").is_some();
    if oracle_check {
        println!(
            "differential: MANX_DIFF_ORACLE_CHECK: t_{prefix}_ref2 answers instead of the gateway"
        );
    }
    let mut all_failures = Vec::new();
    let mut low_answered = Vec::new();
    for seed in seeds() {
        let seed_started = Instant::now();
        println!("differential: seed {seed:#018x}");
        let mut rng = Rng(seed);
        let data = dataset(&mut rng);
        load(&mut c, &f, &data).await;
        if oracle_check {
            c.gw = shuffled_copy(&data, &format!("t_{prefix}_ref2")).await;
        }
        let loaded = seed_started.elapsed();
        let mut g = Gen {
            rng: Rng(seed ^ 0x5151_5151_5151_5151),
            data: &data,
        };
        let mut queries = g.generate(queries_per_seed);
        queries.extend(tricky(&data));
        let mut out = Outcome::default();
        for q in &queries {
            check_query(&mut c, q, &mut out).await;
        }
        print_summary(seed, &out, loaded, seed_started.elapsed());
        if oracle_check {
            c.reconnect_gateway().await;
        }
        if out.answered() < MIN_ANSWERED {
            low_answered.push(format!(
                "seed {seed:#018x}: {} answered < MIN_ANSWERED {MIN_ANSWERED}",
                out.answered()
            ));
        }
        all_failures.extend(
            out.failures
                .into_iter()
                .map(|f| format!("[seed {seed:#018x}] {f}")),
        );
    }
    println!("differential: total time {:?}", started.elapsed());
    let mut shown = String::new();
    for f in all_failures.iter().take(MAX_SHOWN) {
        let _ = write!(shown, "\n\n{f}");
    }
    assert!(
        all_failures.is_empty(),
        "{} queries gave a different answer through the gateway than on the reference database (first {}):{shown}",
        all_failures.len(),
        all_failures.len().min(MAX_SHOWN)
    );
    assert!(low_answered.is_empty(), "{}", low_answered.join("\n"));
}

fn print_summary(seed: u64, out: &Outcome, loaded: Duration, took: Duration) {
    println!(
        "differential: seed {seed:#018x}: {} queries, {} answered, {} equal, {} refused, {} failed, {} known divergences (load {loaded:?}, total {took:?})",
        out.total(),
        out.answered(),
        out.equal(),
        out.total() - out.answered(),
        out.failures.len(),
        out.known.len()
    );
    println!(
        "  {:<28} {:>6} {:>6} {:>8} {:>7} {:>6}",
        "class", "total", "equal", "refused", "failed", "known"
    );
    for (class, s) in &out.classes {
        println!(
            "  {:<28} {:>6} {:>6} {:>8} {:>7} {:>6}",
            class, s.total, s.equal, s.refused, s.failed, s.known
        );
    }
    let mut reasons: Vec<(&String, &(usize, String))> = out.refused.iter().collect();
    reasons.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    println!("  refused, by reason:");
    for (reason, (n, example)) in reasons {
        println!("  {n:>5}  {reason}\n         e.g. {example}");
    }
    for k in &out.known {
        println!("  KNOWN DIVERGENCE: {k}");
    }
    for f in out.failures.iter().take(MAX_SHOWN) {
        println!("  FAILED: {f}");
    }
}

/// The comparison itself must be able to fail: each check against answers built by hand.
#[test]
fn comparison_detects_differences() {
    fn ans(types: &[ColumnType], rows: &[&[Option<&str>]]) -> Answer {
        Answer {
            columns: types
                .iter()
                .enumerate()
                .map(|(i, t)| ColumnMeta {
                    name: format!("c{i}"),
                    ty: *t,
                    length: 10,
                    decimals: 0,
                    charset: 63,
                })
                .collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.map(str::to_string)).collect())
                .collect(),
        }
    }
    fn query(check: Check, folded: &[usize]) -> Query {
        Query {
            class: "unit",
            sql: String::new(),
            check,
            folded: folded.to_vec(),
        }
    }
    use ColumnType::{
        MYSQL_TYPE_DOUBLE as DOUBLE, MYSQL_TYPE_NEWDECIMAL as DEC, MYSQL_TYPE_VAR_STRING as STR,
    };
    let ab = ans(
        &[STR, DEC],
        &[&[Some("a"), Some("1.50")], &[Some("b"), None]],
    );
    let ba = ans(
        &[STR, DEC],
        &[&[Some("b"), None], &[Some("a"), Some("1.50")]],
    );
    let ordered = query(Check::Ordered, &[]);
    let unordered = query(Check::Unordered, &[]);
    assert!(compare(&ordered, &ab, &ab, None).is_ok());
    assert!(compare(&ordered, &ab, &ba, None).is_err());
    assert!(compare(&unordered, &ab, &ba, None).is_ok());
    // Multiplicity, values, NULL against a value, decimals as text, column labels and types.
    let aab = ans(
        &[STR, DEC],
        &[
            &[Some("a"), Some("1.50")],
            &[Some("a"), Some("1.50")],
            &[Some("b"), None],
        ],
    );
    assert!(compare(&unordered, &aab, &ab, None).is_err());
    let a15 = ans(
        &[STR, DEC],
        &[&[Some("a"), Some("1.5")], &[Some("b"), None]],
    );
    assert!(compare(&unordered, &a15, &ab, None).is_err());
    let bnull = ans(
        &[STR, DEC],
        &[&[Some("a"), Some("1.50")], &[Some("b"), Some("0")]],
    );
    assert!(compare(&unordered, &bnull, &ab, None).is_err());
    let mut renamed = ans(
        &[STR, DEC],
        &[&[Some("a"), Some("1.50")], &[Some("b"), None]],
    );
    renamed.columns[1].name = "COUNT0".into();
    assert!(compare(&unordered, &renamed, &ab, None).is_err());
    renamed.columns[1].name = "c1".into();
    assert!(compare(&unordered, &renamed, &ab, None).is_ok());
    renamed.columns[1].decimals = 4;
    assert!(compare(&unordered, &renamed, &ab, None).is_err());
    let retyped = ans(
        &[STR, DOUBLE],
        &[&[Some("a"), Some("1.50")], &[Some("b"), None]],
    );
    assert!(compare(&unordered, &retyped, &ab, None).is_err());
    // Folding: only in folded columns; case, accents and trailing spaces.
    let upper = ans(&[STR], &[&[Some("ÄBC ")]]);
    let lower = ans(&[STR], &[&[Some("abc")]]);
    assert!(compare(&query(Check::Ordered, &[0]), &upper, &lower, None).is_ok());
    assert!(compare(&ordered, &upper, &lower, None).is_err());
    // Floats: a relative tolerance for DOUBLE columns only.
    let f1 = ans(&[DOUBLE], &[&[Some("0.30000000000000004")]]);
    let f2 = ans(&[DOUBLE], &[&[Some("0.3")]]);
    let f3 = ans(&[DOUBLE], &[&[Some("0.3001")]]);
    assert!(compare(&ordered, &f1, &f2, None).is_ok());
    assert!(compare(&ordered, &f3, &f2, None).is_err());
    let d1 = ans(&[DEC], &[&[Some("0.30000000000000004")]]);
    let d2 = ans(&[DEC], &[&[Some("0.3")]]);
    assert!(compare(&ordered, &d1, &d2, None).is_err());
    // Order keys: same multiset, keys out of order.
    let k1 = ans(
        &[STR, STR],
        &[
            &[Some("a"), Some("x")],
            &[Some("A"), Some("y")],
            &[Some("b"), Some("z")],
        ],
    );
    let k2 = ans(
        &[STR, STR],
        &[
            &[Some("A"), Some("y")],
            &[Some("a"), Some("x")],
            &[Some("b"), Some("z")],
        ],
    );
    let k3 = ans(
        &[STR, STR],
        &[
            &[Some("b"), Some("z")],
            &[Some("a"), Some("x")],
            &[Some("A"), Some("y")],
        ],
    );
    let keyed = query(Check::KeyOrdered(vec![0]), &[]);
    assert!(compare(&keyed, &k1, &k2, None).is_ok());
    assert!(compare(&keyed, &k3, &k2, None).is_err());
    // LIMIT without ORDER BY: row count and membership in the full answer.
    let full = ans(&[STR], &[&[Some("a")], &[Some("b")], &[Some("c")]]);
    let limit = |offset, count| {
        query(
            Check::LimitNoOrder {
                full: String::new(),
                offset,
                count,
            },
            &[],
        )
    };
    let two = ans(&[STR], &[&[Some("c")], &[Some("a")]]);
    let twice = ans(&[STR], &[&[Some("a")], &[Some("a")]]);
    let alien = ans(&[STR], &[&[Some("a")], &[Some("d")]]);
    assert!(compare(&limit(0, 2), &two, &two, Some(&full)).is_ok());
    assert!(compare(&limit(1, 5), &two, &two, Some(&full)).is_ok());
    assert!(compare(&limit(0, 3), &two, &two, Some(&full)).is_err());
    assert!(compare(&limit(2, 5), &two, &two, Some(&full)).is_err());
    assert!(compare(&limit(0, 2), &twice, &twice, Some(&full)).is_err());
    assert!(compare(&limit(0, 2), &alien, &alien, Some(&full)).is_err());
    // What counts as a refusal.
    assert!(refusal(
        "ERROR 1064 (42000): ORDER BY over several dataNodes (dn1,dn2) is not supported yet"
    ));
    assert!(refusal(
        "ERROR 1235 (42000): This version of MariaDB doesn't yet support 'x'"
    ));
    assert!(!refusal("ERROR 1146 (42S02): Table 'x.y' doesn't exist"));
    assert!(!refusal("client error: Input/output error"));
    assert_eq!(
        refusal_reason(
            "ERROR 1064 (42000): DISTINCT over several dataNodes (dn1,dn3) is not supported yet"
        ),
        "ERROR 1064 (42000): DISTINCT over several dataNodes (…) is not supported yet"
    );
}

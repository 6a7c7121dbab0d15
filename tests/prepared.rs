//! Server-side prepared statements through the gateway (mysql_async's `exec` uses
//! COM_STMT_PREPARE / COM_STMT_EXECUTE and reads binary result rows).

mod common;

use common::{Extra, Fixture};
use mysql_async::Value;
use mysql_async::prelude::Queryable;

/// id, user_id, traveldate, fee, days.
type TravelRow = (i64, Option<String>, Value, Option<String>, Option<i32>);

#[tokio::test]
async fn bound_parameters_route_like_literals_and_rows_come_back_binary() {
    let f = Fixture::start("ps", Extra::default()).await;
    let mut c = f.client().await;
    // A row placed on dn1 by hand although id 5000001 belongs on dn2 (auto-sharding-long):
    // a statement routed by the bound value never sees it.
    f.backend(1)
        .await
        .query_drop("INSERT INTO travelrecord (id, user_id) VALUES (5000001, 'misplaced')")
        .await
        .unwrap();
    let insert = c
        .prep(
            "INSERT INTO travelrecord (id, user_id, traveldate, fee, days) VALUES (?, ?, ?, ?, ?)",
        )
        .await
        .unwrap();
    assert_eq!(insert.num_params(), 5);
    let rows: Vec<(i64, Value, Value, Value, Value)> = vec![
        (
            5000001,
            Value::from("it's \\ a 'quote' 😀"),
            Value::Date(2024, 2, 29, 0, 0, 0, 0),
            Value::from("12.30"),
            Value::from(-3i32),
        ),
        (1, Value::NULL, Value::NULL, Value::NULL, Value::NULL),
        (
            10000001,
            Value::from("中文"),
            Value::from("2023-12-31"),
            Value::from(0.5f64),
            Value::from(7u32),
        ),
    ];
    c.exec_batch(&insert, rows.clone()).await.unwrap();
    c.close(insert).await.unwrap();
    assert_eq!(f.ids_on(1, "travelrecord").await, [1, 5000001]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5000001]);
    assert_eq!(f.ids_on(3, "travelrecord").await, [10000001]);

    let select = c
        .prep("SELECT id, user_id, traveldate, fee, days FROM travelrecord WHERE id = ?")
        .await
        .unwrap();
    assert_eq!(
        select.columns().len(),
        5,
        "PREPARE describes the result columns"
    );
    // With the backend's scale and length (opensrv writes 0 decimals and length 1024 there).
    assert_eq!(select.columns()[3].decimals(), 2, "fee DECIMAL(10,2)");
    assert_eq!(
        select.columns()[1].column_length(),
        400,
        "user_id VARCHAR(100) utf8mb4"
    );
    let got: Vec<TravelRow> = c.exec(&select, (5000001,)).await.unwrap();
    assert_eq!(
        got,
        [(
            5000001,
            Some("it's \\ a 'quote' 😀".to_string()),
            Value::Date(2024, 2, 29, 0, 0, 0, 0),
            Some("12.30".to_string()),
            Some(-3)
        )]
    );
    // The same statement again with another value, after a transaction came and went.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    let got: Vec<TravelRow> = c.exec(&select, (1,)).await.unwrap();
    assert_eq!(got, [(1, None, Value::NULL, None, None)]);

    // Binary rows agree value for value with the text protocol, across a merge.
    let sql = "SELECT id, user_id, traveldate, fee, days, fee * 2 AS d, CAST(days AS DOUBLE) AS x, TIMEDIFF('10:00:00', '11:30:00.5') AS t, NOW() > '2000-01-01' AS b FROM travelrecord WHERE id > ? ORDER BY fee DESC, id LIMIT ?";
    let text_sql = sql.replacen('?', "0", 1).replacen('?', "10", 1);
    let text: Vec<mysql_async::Row> = c.query(text_sql).await.unwrap();
    let binary: Vec<mysql_async::Row> = c.exec(sql, (0, 10)).await.unwrap();
    // Three placed rows and the misplaced one (no condition narrows `id > 0`).
    assert_eq!(text.len(), 4);
    assert_eq!(binary.len(), 4);
    for (t, b) in text.iter().zip(&binary) {
        for i in 0..t.len() {
            assert_eq!(as_text(&t[i]), as_text(&b[i]), "column {i}");
        }
    }
    let n: Option<i64> = c
        .exec_first(
            "SELECT COUNT(*) FROM travelrecord WHERE user_id = ?",
            ("中文",),
        )
        .await
        .unwrap();
    assert_eq!(n, Some(1));
}

/// A value in the text protocol's form (binary temporal values formatted back to text).
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(
            String::from_utf8_lossy(b)
                .trim_end_matches(" 00:00:00")
                .to_string(),
        ),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Double(d) => Some(d.to_string()),
        Value::Date(y, mo, d, 0, 0, 0, 0) => Some(format!("{y:04}-{mo:02}-{d:02}")),
        Value::Date(y, mo, d, h, mi, s, us) => Some(format!(
            "{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"
        )),
        Value::Time(neg, d, h, m, s, us) => {
            let fraction = format!(".{us:06}");
            Some(format!(
                "{}{:02}:{m:02}:{s:02}{}",
                if *neg { "-" } else { "" },
                d * 24 + u32::from(*h),
                fraction.trim_end_matches('0').trim_end_matches('.')
            ))
        }
    }
}

//! Global sequences through the gateway (SPEC §5.17): `next value for MYCATSEQ_<NAME>` and
//! `autoIncrement` tables, with the local-file (0), database (1) and time-based (2) handlers.

mod common;

use std::collections::BTreeSet;

use common::{Extra, Fixture, server_error};
use mysql_async::prelude::Queryable;

/// `hotnews` (mod-long on id over dn1..dn3) takes its id from the sequence HOTNEWS.
fn schema(handler: u8, files: Vec<(String, String)>) -> Extra {
    Extra {
        schema_xml: r#"<schema name="SEQ">
            <table name="hotnews" primaryKey="id" autoIncrement="true" dataNode="dn1,dn2,dn3" rule="mod-long" />
        </schema>"#
            .to_string(),
        users_xml: format!(
            r#"<system><property name="sequnceHandlerType">{handler}</property></system>
            <user name="seq"><property name="password">seq</property><property name="schemas">SEQ</property></user>"#
        ),
        files,
    }
}

async fn client(f: &Fixture) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, "seq", "seq", Some("SEQ")))
        .await
        .unwrap()
}

/// Every id in `hotnews` on the three nodes.
async fn all_ids(f: &Fixture) -> Vec<i64> {
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.extend(f.ids_on(n, "hotnews").await);
    }
    ids.sort();
    ids
}

/// 8 sessions each insert 10,000 rows (100 INSERTs of 100 rows) at the same time: every id is
/// different.
async fn concurrent_inserts(f: &Fixture, sessions: usize, statements: usize, rows: usize) {
    let mut tasks = Vec::new();
    for s in 0..sessions {
        let mut c = client(f).await;
        tasks.push(tokio::spawn(async move {
            for i in 0..statements {
                let values: Vec<String> = (0..rows).map(|r| format!("('s{s}-{i}-{r}')")).collect();
                c.query_drop(format!(
                    "INSERT INTO hotnews (title) VALUES {}",
                    values.join(", ")
                ))
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sequences_number_rows_uniquely_and_survive_a_restart() {
    let file = "GLOBAL.HISIDS=\nGLOBAL.MINID=10001\nGLOBAL.MAXID=20000\nGLOBAL.CURID=10000\nHOTNEWS.HISIDS=\nHOTNEWS.MINID=1001\nHOTNEWS.MAXID=2000\nHOTNEWS.CURID=1000\n";
    let f = Fixture::start(
        "seqf",
        schema(0, vec![("sequence_conf.properties".into(), file.into())]),
    )
    .await;
    let mut c = client(&f).await;
    c.query_drop("INSERT INTO hotnews (title) VALUES ('a'), ('b'), ('c')")
        .await
        .unwrap();
    assert_eq!(
        c.last_insert_id(),
        Some(1001),
        "the OK packet reports the first key"
    );
    assert_eq!(all_ids(&f).await, [1001, 1002, 1003]);
    // mod-long: 1001 % 3 = 2 → dn3, 1002 → dn1, 1003 → dn2.
    assert_eq!(f.ids_on(1, "hotnews").await, [1002]);
    let last: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    assert_eq!(last, Some(1001));
    let (id, label): (u64, String) = {
        let row: mysql_async::Row = c
            .query_first("SELECT @@identity AS k")
            .await
            .unwrap()
            .unwrap();
        (
            row.get(0).unwrap(),
            row.columns_ref()[0].name_str().into_owned(),
        )
    };
    assert_eq!((id, label.as_str()), (1001, "k"));
    // Explicit sequence calls, each from its own sequence.
    let v: Option<i64> = c
        .query_first("SELECT next value for MYCATSEQ_GLOBAL")
        .await
        .unwrap();
    assert_eq!(v, Some(10001));
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (NEXT VALUE FOR mycatseq_hotnews, 'next value for MYCATSEQ_GLOBAL')")
        .await
        .unwrap();
    assert_eq!(all_ids(&f).await, [1001, 1002, 1003, 1004]);
    let title: Option<String> = c
        .query_first("SELECT title FROM hotnews WHERE id = 1004")
        .await
        .unwrap();
    assert_eq!(
        title.as_deref(),
        Some("next value for MYCATSEQ_GLOBAL"),
        "text inside a string is left alone"
    );
    let (code, _, msg) = server_error(
        c.query_drop("SELECT next value for MYCATSEQ_NOPE")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1003);
    assert!(
        msg.contains("can't find definition for sequence :NOPE"),
        "{msg}"
    );
    let (code, _, msg) = server_error(
        c.query_drop("EXPLAIN INSERT INTO hotnews (title) VALUES ('z')")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");

    // 80,000 keys from 8 sessions at once, across range roll-overs (MAXID 2000).
    concurrent_inserts(&f, 8, 100, 100).await;
    let ids = all_ids(&f).await;
    assert_eq!(ids.len(), 80_004);
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "duplicate keys"
    );
    let max = *ids.last().unwrap();
    assert_eq!(max, 1004 + 80_000, "no value skipped or reused");

    // A restarted gateway continues after the last value handed out.
    drop(c);
    let port = common::start_gateway(f.dir.path()).await;
    let mut c = mysql_async::Conn::new(common::opts(port, "seq", "seq", Some("SEQ")))
        .await
        .unwrap();
    let v: Option<i64> = c
        .query_first("SELECT next value for MYCATSEQ_HOTNEWS")
        .await
        .unwrap();
    assert_eq!(v, Some(max + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_sequences_reserve_blocks_in_the_sequence_table() {
    let f = Fixture::start(
        "seqd",
        schema(
            1,
            vec![("sequence_db_conf.properties".into(), "HOTNEWS=dn1\n".into())],
        ),
    )
    .await;
    // The sequence table and function on dn1, with the contract of Mycat's dbseq.sql:
    // mycat_seq_nextval(name) reserves `increment` values and answers "first,increment".
    let mut b = f.backend(1).await;
    b.query_drop("CREATE TABLE MYCAT_SEQUENCE (name VARCHAR(64) PRIMARY KEY, current_value BIGINT NOT NULL, increment INT NOT NULL)")
        .await
        .unwrap();
    b.query_drop("INSERT INTO MYCAT_SEQUENCE VALUES ('HOTNEWS', 0, 50)")
        .await
        .unwrap();
    b.query_drop(
        "CREATE FUNCTION mycat_seq_nextval(seq VARCHAR(64)) RETURNS VARCHAR(64) DETERMINISTIC MODIFIES SQL DATA
         BEGIN
           DECLARE first BIGINT DEFAULT NULL;
           DECLARE step INT DEFAULT 0;
           SELECT current_value + 1, increment INTO first, step FROM MYCAT_SEQUENCE WHERE name = seq FOR UPDATE;
           IF first IS NULL THEN RETURN '-999999,null'; END IF;
           UPDATE MYCAT_SEQUENCE SET current_value = current_value + step WHERE name = seq;
           RETURN CONCAT(first, ',', step);
         END",
    )
    .await
    .unwrap();
    let mut c = client(&f).await;
    c.query_drop("INSERT INTO hotnews (title) VALUES ('a'), ('b')")
        .await
        .unwrap();
    assert_eq!(all_ids(&f).await, [1, 2]);
    concurrent_inserts(&f, 8, 25, 40).await;
    let ids = all_ids(&f).await;
    assert_eq!(ids.len(), 8_002);
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "duplicate keys"
    );
    // Blocks of 50: the table has moved on by whole blocks.
    let current: Option<i64> = b
        .query_first("SELECT current_value FROM MYCAT_SEQUENCE WHERE name = 'HOTNEWS'")
        .await
        .unwrap();
    let current = current.unwrap();
    assert_eq!(current % 50, 0);
    assert!(current >= *ids.last().unwrap());
    b.query_drop("DELETE FROM MYCAT_SEQUENCE").await.unwrap();
    // A name the mapping does not know.
    let (code, _, msg) = server_error(
        c.query_drop("SELECT next value for MYCATSEQ_OTHER")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1003);
    assert!(
        msg.contains("can't find definition for sequence :OTHER"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_sequences_give_increasing_unique_ids_with_the_worker_bits() {
    let f = Fixture::start(
        "seqt",
        schema(
            2,
            vec![(
                "sequence_time_conf.properties".into(),
                "WORKID=03\nDATAACENTERID=05\n".into(),
            )],
        ),
    )
    .await;
    let mut c = client(&f).await;
    let mut seen = Vec::new();
    for _ in 0..200 {
        let v: Option<i64> = c
            .query_first("SELECT next value for MYCATSEQ_ANY")
            .await
            .unwrap();
        seen.push(v.unwrap());
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(
        seen.iter()
            .all(|v| (v >> 12) & 31 == 3 && (v >> 17) & 31 == 5)
    );
    c.query_drop("INSERT INTO hotnews (title) VALUES ('a'), ('b')")
        .await
        .unwrap();
    let ids = all_ids(&f).await;
    assert_eq!(ids.len(), 2);
    assert!(ids[0] > *seen.last().unwrap());
}

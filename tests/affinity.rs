//! Session affinity: a session that made state in its backend connection — a temporary table,
//! a user variable assigned inside a statement, a named lock — keeps that connection (the
//! rule is on `Session::kept` in src/frontend/session.rs) until COM_RESET_CONNECTION or its
//! end. Judged on the backends where the state shows there (a temporary table shadowing a
//! sharded table leaves the real table empty; a named lock is seen held by another session).

mod common;

use common::run_all;
use common::{Extra, Fixture, primary};
use mysql_async::prelude::Queryable;

fn affinity_schema() -> Extra {
    Extra {
        schema_xml: r#"<schema name="AFF" dataNode="dn1">
            <table name="hotnews" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long" />
        </schema>"#
            .to_string(),
        users_xml: r#"<user name="aff"><property name="password">aff</property><property name="schemas">AFF,TESTDB</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

async fn aff_client(f: &Fixture, db: &str) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, "aff", "aff", Some(db)))
        .await
        .unwrap()
}

/// Other clients churn the pools meanwhile: each takes connections and gives them back.
async fn churn(f: &Fixture) {
    for _ in 0..4 {
        let mut o = aff_client(f, "AFF").await;
        run_all(
            &mut o,
            &["SELECT * FROM hotnews", "SET @other = 1", "SELECT 1"],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_table_stays_with_its_session() {
    let f = Fixture::start("affmp", affinity_schema()).await;
    // In a schema with a default dataNode.
    let mut c = aff_client(&f, "AFF").await;
    run_all(
        &mut c,
        &[
            "CREATE TEMPORARY TABLE scratch (id INT PRIMARY KEY, v VARCHAR(10))",
            "INSERT INTO scratch VALUES (1, 'a'), (2, 'b')",
        ],
    )
    .await;
    for _ in 0..3 {
        churn(&f).await;
        let n: i64 = c
            .query_first("SELECT COUNT(*) FROM scratch")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 2);
    }
    // Through a transaction and out of it: same connection.
    run_all(
        &mut c,
        &["BEGIN", "INSERT INTO scratch VALUES (3, 'c')", "COMMIT"],
    )
    .await;
    churn(&f).await;
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM scratch")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 3);
    // COM_RESET_CONNECTION drops it, as on a server.
    c.reset().await.unwrap();
    let e = c.query_drop("SELECT * FROM scratch").await.unwrap_err();
    assert_eq!(common::server_error(e).0, 1146);

    // Shadowing a sharded table on every dataNode: the rows go to the temporary tables, the
    // real tables on the backends stay empty, and the session reads its own rows back.
    let mut t = aff_client(&f, "TESTDB").await;
    run_all(
        &mut t,
        &[
            "CREATE TEMPORARY TABLE hotnews (id BIGINT PRIMARY KEY, title VARCHAR(200))",
            "INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        ],
    )
    .await;
    churn(&f).await;
    let ids: Vec<i64> = t.query("SELECT id FROM hotnews ORDER BY id").await.unwrap();
    assert_eq!(ids, [1, 2, 3]);
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "hotnews").await, Vec::<i64>::new(), "node {n}");
    }
    drop(t);

    // `CREATE OR REPLACE TEMPORARY TABLE` (and its version-comment spelling) shadowing a real
    // table of the default dataNode: the session's DELETE empties its temporary table, never
    // the real one (it once went to a pooled connection without the temporary table).
    let mut admin = primary(Some(&f.databases[0])).await;
    admin
        .query_drop(
            "CREATE TABLE real_rows (id INT PRIMARY KEY); INSERT INTO real_rows VALUES (1), (2)",
        )
        .await
        .unwrap();
    for create in [
        "CREATE OR REPLACE TEMPORARY TABLE real_rows (id INT PRIMARY KEY)",
        "CREATE /*!40101 OR REPLACE */ TEMPORARY TABLE real_rows (id INT PRIMARY KEY)",
    ] {
        let mut c = aff_client(&f, "AFF").await;
        c.query_drop(create).await.unwrap();
        churn(&f).await;
        let n: Option<i64> = c
            .query_first("SELECT COUNT(*) FROM real_rows")
            .await
            .unwrap();
        assert_eq!(n, Some(0), "{create}");
        c.query_drop("DELETE FROM real_rows").await.unwrap();
        drop(c);
        let n: Option<i64> = admin
            .query_first("SELECT COUNT(*) FROM real_rows")
            .await
            .unwrap();
        assert_eq!(n, Some(2), "{create}: the real table lost rows");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_variables_and_named_locks_stay_with_their_session() {
    let f = Fixture::start("affvar", affinity_schema()).await;
    let mut c = aff_client(&f, "AFF").await;
    let set: Option<i64> = c.query_first("SELECT @aff := 42").await.unwrap();
    assert_eq!(set, Some(42));
    churn(&f).await;
    let got: Option<i64> = c.query_first("SELECT @aff").await.unwrap();
    assert_eq!(got, Some(42));
    let got: Option<i64> = c.query_first("SELECT @aff + 1").await.unwrap();
    assert_eq!(got, Some(43));

    // GET_LOCK: held for the session, seen held by another session on the backend.
    let got: Option<i64> = c
        .query_first("SELECT GET_LOCK('manx_aff_lock', 0)")
        .await
        .unwrap();
    assert_eq!(got, Some(1));
    let mut direct = primary(None).await;
    let free: Option<i64> = direct
        .query_first("SELECT IS_FREE_LOCK('manx_aff_lock')")
        .await
        .unwrap();
    assert_eq!(free, Some(0));
    churn(&f).await;
    let free: Option<i64> = direct
        .query_first("SELECT IS_FREE_LOCK('manx_aff_lock')")
        .await
        .unwrap();
    assert_eq!(
        free,
        Some(0),
        "the named lock was lost when the pool reset its connection"
    );
    // The session that holds it releases it.
    let released: Option<i64> = c
        .query_first("SELECT RELEASE_LOCK('manx_aff_lock')")
        .await
        .unwrap();
    assert_eq!(released, Some(1));
    let free: Option<i64> = direct
        .query_first("SELECT IS_FREE_LOCK('manx_aff_lock')")
        .await
        .unwrap();
    assert_eq!(free, Some(1));
    // Taken again, then the client leaves: it goes with the session.
    let got: Option<i64> = c
        .query_first("SELECT GET_LOCK('manx_aff_lock', 0)")
        .await
        .unwrap();
    assert_eq!(got, Some(1));
    drop(c);
    let mut freed = false;
    for _ in 0..50 {
        let free: Option<i64> = direct
            .query_first("SELECT IS_FREE_LOCK('manx_aff_lock')")
            .await
            .unwrap();
        if free == Some(1) {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(freed, "the named lock outlived its session");
}

/// A kept connection that is lost (killed on its server) takes the session's state with it:
/// the client gets the error, then its connection is closed, rather than going on without a
/// temporary table it made or locks it thinks it holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_a_kept_connection_ends_the_session() {
    let f = Fixture::start("afflost", affinity_schema()).await;
    let mut c = aff_client(&f, "AFF").await;
    c.query_drop("CREATE TEMPORARY TABLE scratch (id INT)")
        .await
        .unwrap();
    // The backend thread of the kept connection: the one holding a named lock taken there
    // (CONNECTION_ID() anywhere answers the gateway's own id).
    c.query_drop("INSERT INTO scratch VALUES (1)")
        .await
        .unwrap();
    c.query_drop("SELECT GET_LOCK('afflost_kept', 0) FROM scratch")
        .await
        .unwrap();
    let mut admin = primary(None).await;
    let thread: Option<u64> = admin
        .query_first("SELECT IS_USED_LOCK('afflost_kept')")
        .await
        .unwrap();
    let thread = thread.expect("a thread id");
    admin
        .query_drop(format!("KILL CONNECTION {thread}"))
        .await
        .unwrap();
    let e = c.query_drop("SELECT * FROM scratch").await.unwrap_err();
    assert!(
        !matches!(&e, mysql_async::Error::Server(s) if s.code == 1146),
        "the statement ran on a fresh connection: {e}"
    );
    // Then the session is gone.
    let after = c.ping().await;
    assert!(after.is_err(), "the session went on after losing its state");
    // Other clients are served.
    let mut d = aff_client(&f, "AFF").await;
    d.query_drop("SELECT * FROM hotnews").await.unwrap();
}

/// With `twoPhaseCommit`, transactions run as XA on pooled connections: a kept temporary table
/// survives them (the coordinator keeps an XA transaction's connections at its end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_state_survives_two_phase_transactions() {
    let mut extra = affinity_schema();
    extra.users_xml = format!(
        "{}{}",
        common::system_xml(&[("twoPhaseCommit", "true"), ("instanceId", "affxa")]),
        extra.users_xml
    );
    let f = Fixture::start("affxa", extra).await;
    let mut c = aff_client(&f, "TESTDB").await;
    run_all(
        &mut c,
        &[
            "CREATE TEMPORARY TABLE hotnews (id BIGINT PRIMARY KEY, title VARCHAR(200))",
            "INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
            "BEGIN",
            "INSERT INTO travelrecord (id, user_id) VALUES (1, 'x'), (5000001, 'y')",
            "COMMIT",
        ],
    )
    .await;
    assert_eq!(f.ids_on(1, "travelrecord").await, [1]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5000001]);
    churn(&f).await;
    let ids: Vec<i64> = c.query("SELECT id FROM hotnews ORDER BY id").await.unwrap();
    assert_eq!(
        ids,
        [1, 2, 3],
        "the temporary tables went with the XA transaction"
    );
}

/// A session that reads its status counters (`SHOW [SESSION] STATUS`) keeps its connection
/// from then on, so later readings count its own statements (mysql-test `win_i_s`:
/// `Feature_window_functions` after each query with a window function), whatever other
/// clients do meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counters_count_the_sessions_statements_once_read() {
    let f = Fixture::start("affst", affinity_schema()).await;
    let mut c = aff_client(&f, "AFF").await;
    let first = window_count(&mut c).await;
    for n in 1..=3 {
        churn(&f).await;
        let _: Vec<(i64, i64)> = c.query("SELECT 1, RANK() OVER (ORDER BY 1)").await.unwrap();
        churn(&f).await;
        assert_eq!(window_count(&mut c).await, first + n);
    }
}

/// The session's `Feature_window_functions` as `SHOW STATUS` answers it.
async fn window_count(c: &mut mysql_async::Conn) -> i64 {
    let row: Option<(String, i64)> = c
        .query_first("SHOW STATUS LIKE 'Feature_window_functions'")
        .await
        .unwrap();
    row.unwrap().1
}

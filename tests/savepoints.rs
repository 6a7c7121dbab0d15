//! Savepoints (`SAVEPOINT`, `ROLLBACK TO [SAVEPOINT]`, `RELEASE SAVEPOINT`) and the chain and
//! release forms of `COMMIT` / `ROLLBACK` through the gateway, judged on the backends: rows
//! read directly from each MariaDB database and PostgreSQL database a transaction touched,
//! including dataNodes that joined the transaction after a savepoint was set. A differential
//! check runs one statement sequence on a plain MariaDB database and through the gateway.

mod common;

use common::postgres::{pg, pg_databases, pg_nodes_xml};
use common::run_all;
use common::{Extra, Fixture, fails, raw, server_error, system_xml};
use mysql_async::prelude::Queryable;

/// travelrecord is sharded by id (auto-sharding-long): these ids land on dn1, dn2 and dn3.
const DN1: i64 = 1;
const DN2: i64 = 5_000_001;
const DN3: i64 = 10_000_001;

async fn insert(c: &mut mysql_async::Conn, id: i64) {
    c.query_drop(format!(
        "INSERT INTO travelrecord (id, user_id) VALUES ({id}, 'u{id}')"
    ))
    .await
    .unwrap_or_else(|e| panic!("insert {id}: {e}"));
}

/// The ids the client's session sees (inside its transaction), sorted.
async fn seen(c: &mut mysql_async::Conn) -> Vec<i64> {
    c.query("SELECT id FROM travelrecord ORDER BY id")
        .await
        .unwrap()
}

/// The ids on each of the fixture's three databases, read directly.
async fn on_backends(f: &Fixture) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    for n in 1..=3 {
        out.push(f.ids_on(n, "travelrecord").await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_span_every_node_including_those_that_join_later() {
    let f = Fixture::start("spnodes", Extra::default()).await;
    let mut c = f.client().await;

    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN1).await;
    c.query_drop("SAVEPOINT a").await.unwrap();
    insert(&mut c, DN1 + 1).await;
    // dn2 joins the transaction after `a`.
    insert(&mut c, DN2).await;
    c.query_drop("SAVEPOINT b").await.unwrap();
    // dn3 joins after `b`; dn1 and dn2 write after it too.
    insert(&mut c, DN3).await;
    insert(&mut c, DN1 + 2).await;
    insert(&mut c, DN2 + 1).await;
    assert_eq!(
        seen(&mut c).await,
        [DN1, DN1 + 1, DN1 + 2, DN2, DN2 + 1, DN3]
    );
    // Nothing is committed yet.
    assert_eq!(on_backends(&f).await, [[0i64; 0]; 3]);

    c.query_drop("ROLLBACK TO SAVEPOINT b").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN1, DN1 + 1, DN2]);
    // `b` stays: work after it can be undone again, on a node that joined after it too.
    insert(&mut c, DN3 + 1).await;
    c.query_drop("ROLLBACK WORK TO b").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN1, DN1 + 1, DN2]);

    // Back to `a`: dn2, which joined after it, loses everything; `b` is gone.
    c.query_drop("rollback to `A`").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN1]);
    let message = fails(&mut c, "ROLLBACK TO b", 1305, "42000").await;
    assert_eq!(message, "SAVEPOINT b does not exist");

    // The transaction goes on, on every node, and commits.
    insert(&mut c, DN2 + 2).await;
    insert(&mut c, DN3 + 2).await;
    c.query_drop("RELEASE SAVEPOINT a").await.unwrap();
    fails(&mut c, "ROLLBACK TO a", 1305, "42000").await;
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(
        on_backends(&f).await,
        [vec![DN1], vec![DN2 + 2], vec![DN3 + 2]]
    );
}

/// A write to several dataNodes that failed on some after others applied it leaves the
/// transaction only to be rolled back; going back to a savepoint set before it puts every node
/// in the same state again, and the transaction goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_to_a_savepoint_repairs_a_write_that_failed_on_some_nodes() {
    let f = Fixture::start("sprepair", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN2).await;
    c.query_drop("SAVEPOINT before").await.unwrap();
    // dn1 takes its row, dn2 refuses its duplicate.
    let sql = format!("INSERT INTO travelrecord (id, user_id) VALUES ({DN1}, 'a'), ({DN2}, 'dup')");
    let (code, _, message) = server_error(c.query_drop(&sql).await.unwrap_err());
    assert_eq!(code, 1062, "{message}");
    // Only ROLLBACK (or ROLLBACK TO) may follow.
    fails(&mut c, "SAVEPOINT later", 1003, "HY000").await;
    fails(&mut c, "RELEASE SAVEPOINT before", 1003, "HY000").await;
    c.query_drop("ROLLBACK TO before").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN2]);
    insert(&mut c, DN3).await;
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(on_backends(&f).await, [vec![], vec![DN2], vec![DN3]]);

    // Without the savepoint the transaction can only be rolled back (unchanged behaviour).
    c.query_drop("BEGIN").await.unwrap();
    let sql = format!(
        "INSERT INTO travelrecord (id, user_id) VALUES ({}, 'a'), ({DN2}, 'dup')",
        DN1 + 1
    );
    c.query_drop(&sql).await.unwrap_err();
    fails(&mut c, "COMMIT", 1003, "HY000").await;
    assert_eq!(on_backends(&f).await, [vec![], vec![DN2], vec![DN3]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoint_names_follow_mysql_rules() {
    let f = Fixture::start("spnames", Extra::default()).await;
    let mut c = f.client().await;

    // Outside a transaction (autocommit on): accepted, nothing kept.
    c.query_drop("SAVEPOINT a").await.unwrap();
    let message = fails(&mut c, "ROLLBACK TO a", 1305, "42000").await;
    assert_eq!(message, "SAVEPOINT a does not exist");
    fails(&mut c, "RELEASE SAVEPOINT a", 1305, "42000").await;

    // RELEASE removes the savepoint and the later ones.
    run_all(
        &mut c,
        &["BEGIN", "SAVEPOINT a", "SAVEPOINT b", "RELEASE SAVEPOINT a"],
    )
    .await;
    fails(&mut c, "ROLLBACK TO b", 1305, "42000").await;
    fails(&mut c, "RELEASE SAVEPOINT nope", 1305, "42000").await;

    // Setting a name again moves it after the others (MySQL replaces it).
    c.query_drop("SAVEPOINT a").await.unwrap();
    insert(&mut c, DN1).await;
    c.query_drop("SAVEPOINT b").await.unwrap();
    insert(&mut c, DN2).await;
    c.query_drop("SAVEPOINT A").await.unwrap();
    insert(&mut c, DN3).await;
    c.query_drop("ROLLBACK TO b").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN1]);
    fails(&mut c, "ROLLBACK TO a", 1305, "42000").await;
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![]]);

    // The transaction's end forgets its savepoints.
    run_all(&mut c, &["BEGIN", "SAVEPOINT s", "COMMIT", "BEGIN"]).await;
    fails(&mut c, "ROLLBACK TO s", 1305, "42000").await;
    c.query_drop("ROLLBACK").await.unwrap();

    // With autocommit off a savepoint opens the transaction's list before any node joins:
    // the node that joins then gets it.
    run_all(&mut c, &["SET autocommit = 0", "SAVEPOINT `Sp_1`"]).await;
    insert(&mut c, DN2 + 5).await;
    c.query_drop("ROLLBACK TO SAVEPOINT sp_1").await.unwrap();
    insert(&mut c, DN3 + 5).await;
    run_all(&mut c, &["COMMIT", "SET autocommit = 1"]).await;
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![DN3 + 5]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_savepoint_statements_are_refused_and_change_nothing() {
    let f = Fixture::start("spbad", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN1).await;
    for sql in [
        "SAVEPOINT a b",
        "SAVEPOINT `a``; DROP TABLE travelrecord; --`",
        "SAVEPOINT 'a'",
        "SAVEPOINT a.b",
        "RELEASE SAVEPOINT a, b",
        "ROLLBACK TO SAVEPOINT a OR 1",
        "COMMIT AND CHAIN RELEASE",
    ] {
        fails(&mut c, sql, 1064, "42000").await;
    }
    // None of them set a savepoint or ended the transaction.
    fails(&mut c, "ROLLBACK TO a", 1305, "42000").await;
    assert_eq!(seen(&mut c).await, [DN1]);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![]]);

    // A client without CLIENT_MULTI_STATEMENTS (with it, each piece is a statement of its own,
    // checked alone, as MySQL runs them): a savepoint with a second statement behind it is
    // refused whole.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", f.port))
        .await
        .unwrap();
    raw::login(&mut s, "root", "123456", "TESTDB")
        .await
        .unwrap();
    let mut query = async |sql: &str| {
        let mut p = vec![0x03];
        p.extend_from_slice(sql.as_bytes());
        raw::write_packet(&mut s, 0, &p).await;
        let (_, answer) = raw::read_packet(&mut s).await;
        match answer[0] {
            0x00 => Ok(()),
            _ => Err(raw::err_packet(&answer)),
        }
    };
    query("BEGIN").await.unwrap();
    query(&format!(
        "INSERT INTO travelrecord (id, user_id) VALUES ({DN2}, 'x')"
    ))
    .await
    .unwrap();
    for sql in [
        "SAVEPOINT a; DROP TABLE travelrecord",
        "SAVEPOINT a;DROP TABLE travelrecord",
        "ROLLBACK TO a; DROP TABLE travelrecord",
    ] {
        let (code, state, message) = query(sql).await.unwrap_err();
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {message}");
    }
    let (code, _, _) = query("ROLLBACK TO a").await.unwrap_err();
    assert_eq!(code, 1305);
    query("COMMIT").await.unwrap();
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![DN2], vec![]]);
    // The table is still on every database.
    for n in 1..=3 {
        let tables: Vec<String> = f
            .backend(n)
            .await
            .query("SHOW TABLES LIKE 'travelrecord'")
            .await
            .unwrap();
        assert_eq!(tables, ["travelrecord"], "database {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_and_rollback_chain_and_release() {
    let f = Fixture::start("spchain", Extra::default()).await;
    let mut c = f.client().await;

    // COMMIT AND CHAIN: committed, and the next statement is in a new transaction.
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN1).await;
    run_all(&mut c, &["SAVEPOINT a", "COMMIT AND CHAIN"]).await;
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![]]);
    fails(&mut c, "ROLLBACK TO a", 1305, "42000").await;
    insert(&mut c, DN2).await;
    assert_eq!(
        on_backends(&f).await,
        [vec![DN1], vec![], vec![]],
        "the chained transaction is open"
    );
    // ROLLBACK AND CHAIN: rolled back, and again in a transaction.
    c.query_drop("ROLLBACK WORK AND CHAIN NO RELEASE")
        .await
        .unwrap();
    insert(&mut c, DN3).await;
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![]]);
    c.query_drop("COMMIT AND NO CHAIN").await.unwrap();
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![], vec![DN3]]);
    // Out of the transaction again: autocommit.
    insert(&mut c, DN2 + 1).await;
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![DN2 + 1], vec![DN3]]);

    // COMMIT RELEASE: committed, answered, then the connection is closed.
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN1 + 1).await;
    c.query_drop("COMMIT RELEASE").await.unwrap();
    let after = c.query_drop("SELECT 1").await;
    assert!(
        matches!(after, Err(ref e) if !matches!(e, mysql_async::Error::Server(_))),
        "the connection should be closed: {after:?}"
    );
    drop(c);
    assert_eq!(
        on_backends(&f).await,
        [vec![DN1, DN1 + 1], vec![DN2 + 1], vec![DN3]]
    );

    // ROLLBACK RELEASE: rolled back, then closed.
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN3 + 1).await;
    c.query_drop("ROLLBACK RELEASE").await.unwrap();
    assert!(c.query_drop("SELECT 1").await.is_err());
    drop(c);
    assert_eq!(
        on_backends(&f).await,
        [vec![DN1, DN1 + 1], vec![DN2 + 1], vec![DN3]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_sequence_answers_as_on_one_mariadb_database() {
    let f = Fixture::start("spdiff", Extra::default()).await;
    // The reference: one plain MariaDB database with the same table.
    let reference_db = "t_spdiff_ref";
    let mut reference = common::sample_database(reference_db).await;
    let mut c = f.client().await;
    let sequence = [
        "SAVEPOINT outside",
        "ROLLBACK TO outside",
        "BEGIN",
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a')",
        "SAVEPOINT s1",
        "INSERT INTO travelrecord (id, user_id) VALUES (5000001, 'b'), (2, 'c')",
        "SAVEPOINT s2",
        "UPDATE travelrecord SET user_id = 'x' WHERE id IN (1, 5000001)",
        "INSERT INTO travelrecord (id, user_id) VALUES (10000001, 'd')",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "SAVEPOINT s3",
        "DELETE FROM travelrecord WHERE id = 2",
        "ROLLBACK TO SAVEPOINT s2",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "ROLLBACK TO s3",
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'dup')",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "SAVEPOINT s1",
        "INSERT INTO travelrecord (id, user_id) VALUES (10000002, 'e')",
        "ROLLBACK TO s2",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "ROLLBACK TO s1",
        "RELEASE SAVEPOINT s2",
        "RELEASE SAVEPOINT s2",
        "COMMIT AND CHAIN",
        "UPDATE travelrecord SET user_id = 'y' WHERE id = 5000001",
        "SAVEPOINT t",
        "DELETE FROM travelrecord",
        "ROLLBACK TO t",
        "ROLLBACK AND CHAIN",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "INSERT INTO travelrecord (id, user_id) VALUES (3, 'f')",
        "COMMIT",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
    ];
    type Answer = Result<Vec<(i64, String)>, (u16, String)>;
    async fn answer(c: &mut mysql_async::Conn, sql: &str) -> Answer {
        let result = if sql.starts_with("SELECT") {
            c.query(sql).await
        } else {
            c.query_drop(sql).await.map(|()| Vec::new())
        };
        result.map_err(|e| {
            let (code, state, _) = server_error(e);
            (code, state)
        })
    }
    for sql in sequence {
        let want = answer(&mut reference, sql).await;
        let got = answer(&mut c, sql).await;
        assert_eq!(got, want, "{sql}");
    }
    // What was committed, read from the backends, is the reference's table.
    let want: Vec<(i64, String)> = reference
        .query("SELECT id, user_id FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    let mut got: Vec<(i64, String)> = Vec::new();
    for n in 1..=3 {
        got.extend(
            f.backend(n)
                .await
                .query::<(i64, String), _>("SELECT id, user_id FROM travelrecord")
                .await
                .unwrap(),
        );
    }
    got.sort();
    assert_eq!(got, want);
    assert!(!want.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_in_two_phase_transactions() {
    let f = Fixture::start(
        "spxa",
        Extra::system(&[("twoPhaseCommit", "true"), ("instanceId", "spxa")]),
    )
    .await;
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    insert(&mut c, DN1).await;
    c.query_drop("SAVEPOINT a").await.unwrap();
    // dn2's XA branch joins after `a`.
    insert(&mut c, DN2).await;
    insert(&mut c, DN1 + 1).await;
    c.query_drop("ROLLBACK TO a").await.unwrap();
    assert_eq!(seen(&mut c).await, [DN1]);
    insert(&mut c, DN3).await;
    c.query_drop("SAVEPOINT b").await.unwrap();
    insert(&mut c, DN2 + 1).await;
    run_all(&mut c, &["RELEASE SAVEPOINT b", "COMMIT"]).await;
    assert_eq!(on_backends(&f).await, [vec![DN1], vec![DN2 + 1], vec![DN3]]);
}

/// The ids of `orders` the client's session sees, sorted.
async fn orders_seen(c: &mut mysql_async::Conn) -> Vec<i32> {
    c.query("SELECT id FROM orders ORDER BY id").await.unwrap()
}

/// Ids of `orders` in PostgreSQL database `db`, sorted.
async fn pg_ids(db: &str) -> Vec<i32> {
    pg(db)
        .await
        .query("SELECT id FROM orders ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// PostgreSQL dataNodes: the client's savepoints live beside the gateway's own statement
/// savepoint (which the next statement releases and sets again), also when a statement fails
/// and is undone in between, and on a node that joins after the savepoint; plain and
/// two-phase transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_on_postgresql_nodes() {
    for (prefix, two_phase) in [("sppg", false), ("sppgxa", true)] {
        let dbs = pg_databases(prefix, 3).await;
        common::postgres::pg_each(
            &dbs,
            "CREATE TABLE orders (id int PRIMARY KEY, cust varchar(20))",
        )
        .await;
        let properties = if two_phase {
            system_xml(&[("twoPhaseCommit", "true"), ("instanceId", prefix)])
        } else {
            String::new()
        };
        let f = Fixture::start(
            prefix,
            Extra {
                schema_xml: format!(
                    r#"<schema name="PGDB" checkSQLschema="false">
  <table name="orders" primaryKey="id" dataNode="pgdn1,pgdn2,pgdn3" rule="mod-long" />
</schema>
{}"#,
                    pg_nodes_xml(&dbs)
                ),
                users_xml: format!(
                    r#"{properties}<user name="pg"><property name="password">pg</property><property name="schemas">PGDB</property></user>"#
                ),
                ..Extra::default()
            },
        )
        .await;
        let mut c = mysql_async::Conn::new(common::opts(f.port, "pg", "pg", Some("PGDB")))
            .await
            .unwrap();
        let ins = |id: i32| format!("INSERT INTO orders (id, cust) VALUES ({id}, 'c{id}')");
        // mod-long over three nodes: id % 3 is the node (0: pgdn1, 1: pgdn2, 2: pgdn3).
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(ins(3)).await.unwrap();
        c.query_drop("SAVEPOINT a").await.unwrap();
        // Statements after the savepoint on the same node (each releases and sets the
        // statement savepoint) and on pgdn2, which joins now.
        c.query_drop(ins(6)).await.unwrap();
        c.query_drop(ins(4)).await.unwrap();
        // A failing statement is undone alone; the transaction and `a` stay.
        let (code, _, message) = server_error(c.query_drop(ins(3)).await.unwrap_err());
        assert_eq!(code, 1062, "{message}");
        c.query_drop("SAVEPOINT b").await.unwrap();
        c.query_drop(ins(5)).await.unwrap();
        c.query_drop(ins(9)).await.unwrap();
        assert_eq!(orders_seen(&mut c).await, [3, 4, 5, 6, 9]);
        c.query_drop("ROLLBACK TO SAVEPOINT b").await.unwrap();
        assert_eq!(orders_seen(&mut c).await, [3, 4, 6]);
        c.query_drop("ROLLBACK TO a").await.unwrap();
        assert_eq!(orders_seen(&mut c).await, [3]);
        fails(&mut c, "ROLLBACK TO b", 1305, "42000").await;
        c.query_drop(ins(7)).await.unwrap();
        c.query_drop("SAVEPOINT c").await.unwrap();
        c.query_drop(ins(12)).await.unwrap();
        c.query_drop("RELEASE SAVEPOINT a").await.unwrap();
        fails(&mut c, "ROLLBACK TO c", 1305, "42000").await;
        // The statement savepoint works again after the release.
        let (code, _, _) = server_error(c.query_drop(ins(7)).await.unwrap_err());
        assert_eq!(code, 1062);
        c.query_drop(ins(8)).await.unwrap();
        c.query_drop("COMMIT").await.unwrap();
        assert_eq!(pg_ids(&dbs[0]).await, [3, 12], "{prefix}");
        assert_eq!(pg_ids(&dbs[1]).await, [7], "{prefix}");
        assert_eq!(pg_ids(&dbs[2]).await, [8], "{prefix}");
    }
}

/// `mariadb-dump --single-transaction` (START TRANSACTION WITH CONSISTENT SNAPSHOT, UNLOCK
/// TABLES, then per table SAVEPOINT sp / ROLLBACK TO SAVEPOINT sp / RELEASE SAVEPOINT sp)
/// dumps a sharded table's rows from every dataNode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_dump_single_transaction_through_the_gateway() {
    let f = Fixture::start("spdump", Extra::default()).await;
    let mut c = f.client().await;
    for id in [DN1, DN2, DN3] {
        insert(&mut c, id).await;
    }
    let port = f.port;
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("mariadb-dump")
            .args([
                "-h127.0.0.1",
                &format!("-P{port}"),
                "-uroot",
                "-p123456",
                "--skip-ssl",
                "--single-transaction",
                "--no-tablespaces",
                "TESTDB",
                "travelrecord",
                "company",
            ])
            .output()
            .expect("mariadb-dump is installed (with the mariadb client)")
    })
    .await
    .unwrap();
    let dump = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{dump}",
        String::from_utf8_lossy(&out.stderr)
    );
    for id in [DN1, DN2, DN3] {
        assert!(dump.contains(&format!("({id},'u{id}'")), "{id}: {dump}");
    }
    assert!(dump.contains("CREATE TABLE `company`"), "{dump}");
}

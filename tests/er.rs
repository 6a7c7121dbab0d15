//! ER tables (`childTable`): a child row is stored on its parent's dataNode, and joins of parent
//! and child on the join key run on every node at once (their rows are co-located).

mod common;

use common::{Extra, Fixture, server_error};
use mysql_async::prelude::Queryable;

fn er_schema() -> Extra {
    Extra {
        schema_xml: r#"<schema name="ER">
            <table name="customer" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long">
                <childTable name="orders" primaryKey="id" joinKey="customer_id" parentKey="id">
                    <childTable name="order_items" joinKey="order_id" parentKey="id" />
                </childTable>
            </table>
            <table name="hotnews" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long" />
            <table name="company" primaryKey="id" type="global" dataNode="dn1,dn2,dn3" />
        </schema>"#
            .to_string(),
        users_xml: r#"<user name="er"><property name="password">er</property><property name="schemas">ER</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

#[tokio::test]
async fn child_rows_follow_their_parent_and_parent_child_joins_run_on_every_node() {
    let f = Fixture::start("er", er_schema()).await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "er", "er", Some("ER")))
        .await
        .unwrap();
    for ddl in [
        "CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(20))",
        "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount DECIMAL(8,2))",
        "CREATE TABLE order_items (id INT PRIMARY KEY, order_id INT, sku VARCHAR(10))",
    ] {
        c.query_drop(ddl).await.unwrap();
    }
    c.query_drop("INSERT INTO customer (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
        .await
        .unwrap();
    // mod-long on the parent's id: customer 1 and 4 on dn2, 2 on dn3, 3 on dn1.
    c.query_drop(
        "INSERT INTO orders (id, customer_id, amount) VALUES (10, 1, 1.00), (11, 2, 2.00), (12, 3, 3.00), (13, 4, 4.00), (14, 4, 5.00)",
    )
    .await
    .unwrap();
    c.query_drop("INSERT INTO orders SET id = 15, customer_id = 3, amount = 6.00")
        .await
        .unwrap();
    let mut on = Vec::new();
    for n in 1..=3 {
        on.push(f.ids_on(n, "orders").await);
    }
    assert_eq!(on, [vec![12, 15], vec![10, 13, 14], vec![11]]);

    // Parent ⋈ child on the join key: every node joins its own rows.
    let rows: Vec<(i32, i32, String)> = c
        .query("SELECT c.id, o.id, o.amount FROM customer c JOIN orders o ON o.customer_id = c.id ORDER BY o.id")
        .await
        .unwrap();
    let expected: Vec<(i32, i32, String)> = [
        (1, 10, "1.00"),
        (2, 11, "2.00"),
        (3, 12, "3.00"),
        (4, 13, "4.00"),
        (4, 14, "5.00"),
        (3, 15, "6.00"),
    ]
    .into_iter()
    .map(|(a, b, s)| (a, b, s.to_string()))
    .collect();
    assert_eq!(rows, expected);
    // With aggregates and the join written in WHERE; unqualified join key.
    let rows: Vec<(String, i64, String)> = c
        .query("SELECT name, COUNT(*), SUM(amount) FROM customer, orders WHERE customer_id = customer.id GROUP BY name ORDER BY name")
        .await
        .unwrap();
    assert_eq!(
        rows,
        [
            ("a".to_string(), 1, "1.00".to_string()),
            ("b".to_string(), 1, "2.00".to_string()),
            ("c".to_string(), 2, "9.00".to_string()),
            ("d".to_string(), 2, "9.00".to_string())
        ]
    );
    // A condition on the child's join key routes like the parent's sharding column.
    let plan: Vec<(String, String)> = c
        .query("EXPLAIN SELECT * FROM orders WHERE customer_id = 4")
        .await
        .unwrap();
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].0, "dn2");
    // A LEFT JOIN from the parent keeps customers without orders.
    c.query_drop("INSERT INTO customer (id, name) VALUES (5, 'e')")
        .await
        .unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM customer c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL")
        .await
        .unwrap();
    assert_eq!(n, Some(1));

    // A grandchild is placed by looking its parent row up: order 13 is on dn2, 12 on dn1.
    c.query_drop("INSERT INTO order_items (id, order_id, sku) VALUES (100, 13, 'x')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO order_items SET id = 101, order_id = '12', sku = 'y'")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "order_items").await, [100]);
    assert_eq!(f.ids_on(1, "order_items").await, [101]);
    // Without a column list the join key is found by the table's column order.
    c.query_drop("INSERT INTO order_items VALUES (103, 13, 'w')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "order_items").await, [100, 103]);
    c.query_drop("DELETE FROM order_items WHERE id = 103")
        .await
        .unwrap();
    // Inside a transaction the parent inserted moments before (not committed) is found.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO orders (id, customer_id, amount) VALUES (16, 2, 1.00)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO order_items (id, order_id, sku) VALUES (102, 16, 'z')")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(f.ids_on(3, "order_items").await, [102]);
    // Three levels joined on their join keys.
    let rows: Vec<(i32, i32, String)> = c
        .query("SELECT c.id, i.id, i.sku FROM customer c JOIN orders o ON o.customer_id = c.id JOIN order_items i ON i.order_id = o.id ORDER BY i.id")
        .await
        .unwrap();
    assert_eq!(
        rows,
        [
            (4, 100, "x".to_string()),
            (3, 101, "y".to_string()),
            (2, 102, "z".to_string())
        ]
    );
    for (sql, text) in [
        (
            "INSERT INTO order_items (id, order_id, sku) VALUES (103, 999, 'q')",
            "can't find (root) parent sharding node",
        ),
        (
            "INSERT INTO order_items (id, order_id) VALUES (104, 10), (105, 11)",
            "ChildTable multi insert not provided",
        ),
        (
            "INSERT INTO order_items (id, sku) VALUES (106, 'q')",
            "joinKey not provided :ORDER_ID",
        ),
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    for n in 1..=3 {
        assert!(
            f.ids_on(n, "order_items").await.iter().all(|id| *id < 103),
            "a refused INSERT wrote nothing"
        );
    }

    // What would move or misplace rows, or join rows of different nodes, is refused.
    for (sql, text) in [
        (
            "UPDATE orders SET customer_id = 2 WHERE id = 10",
            "Parent relevant column can't be updated ORDERS->CUSTOMER_ID",
        ),
        // ON DUPLICATE KEY UPDATE of the joinKey would leave the row on its old parent's node.
        (
            "INSERT INTO orders (id, customer_id, amount) VALUES (10, 1, 1.00) ON DUPLICATE KEY UPDATE customer_id = 2",
            "Parent relevant column can't be updated: ORDERS -> CUSTOMER_ID",
        ),
        (
            "INSERT INTO order_items (id, order_id, sku) VALUES (100, 13, 'x') ON DUPLICATE KEY UPDATE order_id = 11",
            "Parent relevant column can't be updated: ORDER_ITEMS -> ORDER_ID",
        ),
        (
            "SELECT * FROM customer c JOIN orders o ON o.id = c.id",
            "cross-node join",
        ),
        ("SELECT * FROM customer c JOIN hotnews h ON h.id = c.id", ""),
        (
            "INSERT INTO orders (id, amount) VALUES (20, 1.00)",
            "CUSTOMER_ID",
        ),
    ] {
        let r = c.query_drop(sql).await;
        if text.is_empty() {
            // Same function (mod-long) over the same nodes, joined on both sharding columns:
            // co-located, so it runs.
            r.unwrap();
            continue;
        }
        let (code, _, msg) = server_error(r.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    let mut dn2 = f.backend(2).await;
    let order: Vec<(i32, i32)> = dn2
        .query("SELECT id, customer_id FROM orders WHERE id = 10")
        .await
        .unwrap();
    assert_eq!(
        order,
        [(10, 1)],
        "order 10 still belongs to customer 1 on dn2"
    );
    let item: Vec<(i32, i32)> = dn2
        .query("SELECT id, order_id FROM order_items WHERE id = 100")
        .await
        .unwrap();
    assert_eq!(
        item,
        [(100, 13)],
        "item 100 still belongs to order 13 on dn2"
    );
}

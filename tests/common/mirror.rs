//! The differential check of the security boundary (issue 17 item 8): whatever manx sends to a
//! backend must also be allowed to a backend account whose grants mirror the manx user's
//! schemas, `readOnly` and `<privileges>`.
//!
//! The check runs the real gateway, in-process, once per manx user, each over a config whose
//! dataHost connects with that user's *mirror account* instead of an all-privileged one. So the
//! backend itself judges every statement manx forwards — canonical text, per-node rewrites,
//! replayed session state, hint payloads, multi-statements — and an access-denied error there
//! is a finding. Two signals, both read on the backend's side: the server's
//! `Access_denied_errors` status counter (read before and after every case), and an error
//! reaching the client that names a mirror account (MariaDB's own denial messages name the
//! account; manx's refusals name the manx user, never the backend's).
//!
//! The mirror of a user ([`mirror_grants`]) follows the rules of `src/route/access.rs`: for each
//! table of each of the user's schemas, on each of its dataNodes' databases, the privileges of
//! its `dml` mask (INSERT, UPDATE, SELECT, DELETE; all four when unchecked), plus CREATE, DROP,
//! ALTER, INDEX when the mask has every write bit; only SELECT when `readOnly`; LOCK TABLES on
//! each of those databases (its tables still need SELECT); for a schema
//! with a default dataNode, the same on the whole database (MariaDB's grants only add, so a
//! `<privileges>` table entry inside such a schema cannot be mirrored: [`mirror_grants`] refuses
//! it). MariaDB also asks for SELECT on the columns an UPDATE or DELETE reads, which manx's
//! rules follow.
//!
//! Cases come from bytes ([`Case::decode`]): three header bytes choose the manx user, the
//! sql_mode set first and the current schema; the rest is split at 0xFF into COM_QUERY packets,
//! and in each, bytes 0x80..=0xFE stand for the SQL fragments of [`FRAGMENTS`] (keywords, table
//! names inside and outside the user's reach, quotes, literal prefixes such as `B"` and
//! `_binary"`, comment and version-comment openers, hints, `;`, Unicode white space) while bytes below 0x80 are themselves. A fuzzer mutating such
//! bytes writes statements with comments, version comments, quotes in every sql_mode, hints and
//! multi-statements; `tests/mirror.rs` replays the seeds and a fixed random sample in CI, and the
//! `mirror` fuzz target (`fuzz/`) searches further.
//!
//! Self-contained (no `super::`) so that the fuzz target can include it by path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;
use mysql_async::prelude::Queryable;

/// The backend databases: three shards of TESTDB, PUB's default dataNode, and a victim no
/// schema names.
pub const DATABASES: [&str; 5] = ["fz_db1", "fz_db2", "fz_db3", "fz_pub", "fz_victim"];

/// The manx users, in the order the first header byte picks them.
pub const USERS: [&str; 3] = ["app", "ro", "priv"];

/// The sql_mode a case sets first (`None`: the server's default is left), by the second byte.
pub const MODES: [Option<&str>; 7] = [
    None,
    Some(""),
    Some("NO_BACKSLASH_ESCAPES"),
    Some("ANSI_QUOTES"),
    Some("ANSI"),
    Some("PIPES_AS_CONCAT"),
    Some("NO_BACKSLASH_ESCAPES,ANSI_QUOTES"),
];

/// The current schema at login, by the third byte.
pub const SCHEMAS: [Option<&str>; 3] = [Some("TESTDB"), Some("PUB"), None];

const SCHEMA_XML: &str = r#"<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="TESTDB" checkSQLschema="true">
        <table name="orders" primaryKey="id" dataNode="fz1,fz2,fz3" rule="mod-long">
            <childTable name="order_item" primaryKey="id" joinKey="order_id" parentKey="id" />
        </table>
        <table name="note" primaryKey="id" dataNode="fz1,fz2,fz3" rule="mod-long" />
        <table name="customer" primaryKey="id" type="global" dataNode="fz1,fz2,fz3" />
        <table name="item" primaryKey="id" dataNode="fz1" />
        <table name="secret" primaryKey="id" dataNode="fz2" />
    </schema>
    <schema name="PUB" dataNode="fzpub" />
    <dataNode name="fz$1-3" dataHost="mirror" database="fz_db$1-3" />
    <dataNode name="fzpub" dataHost="mirror" database="fz_pub" />
    <dataHost name="mirror" maxCon="20" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
        <heartbeat>select user()</heartbeat>
        <writeHost host="m1" url="127.0.0.1:@PORT@" user="@USER@" password="@USER@" />
    </dataHost>
</mycat:schema>
"#;

const SERVER_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <system>
        <property name="sqlExecuteTimeout">10</property>
    </system>
    <user name="app">
        <property name="password">app</property>
        <property name="schemas">TESTDB,PUB</property>
    </user>
    <user name="ro">
        <property name="password">ro</property>
        <property name="schemas">TESTDB,PUB</property>
        <property name="readOnly">true</property>
    </user>
    <user name="priv">
        <property name="password">priv</property>
        <property name="schemas">TESTDB</property>
        <privileges check="true">
            <schema name="TESTDB" dml="1111">
                <table name="orders" dml="0010" />
                <table name="customer" dml="1010" />
                <table name="item" dml="0110" />
                <table name="note" dml="0011" />
                <table name="secret" dml="0000" />
            </schema>
        </privileges>
    </user>
</mycat:server>
"#;

/// The tables of every database (each with two rows), recreated by [`World::reset`].
const TABLES: [&str; 8] = [
    "orders",
    "order_item",
    "note",
    "customer",
    "item",
    "secret",
    "pub",
    "vt",
];

/// Stored functions [`World::reset`] creates in every database, named like built-ins.
const STORED_FUNCTIONS: [&str; 9] = [
    "now",
    "count",
    "trim",
    "substring",
    "substr",
    "point",
    "linestring",
    "curdate",
    "f_side",
];

/// The backend account mirroring manx user `user`.
pub fn mirror_account(user: &str) -> String {
    format!("mirror_{user}")
}

/// The GRANT statements of `user`'s mirror account ([`mirror_account`]), from the config's
/// schemas, dataNodes, `readOnly` and `<privileges>` (module docs).
///
/// Errors: a `<privileges>` table entry in a schema with a default dataNode (not mirrorable).
pub fn mirror_grants(config: &Config, user: &str) -> Result<Vec<String>, String> {
    let u = &config.users[user];
    let account = format!("'{}'@'%'", mirror_account(user));
    let privileges = |mask: [bool; 4]| -> Option<String> {
        let names = ["INSERT", "UPDATE", "SELECT", "DELETE"];
        let mut out: Vec<&str> = (0..4)
            .filter(|&i| mask[i] && (!u.read_only || i == 2))
            .map(|i| names[i])
            .collect();
        if !u.read_only && mask[0] && mask[1] && mask[3] {
            out.extend(["CREATE", "DROP", "ALTER", "INDEX"]);
        }
        (!out.is_empty()).then(|| out.join(", "))
    };
    let mut grants = Vec::new();
    for s in &u.schemas {
        let schema = &config.schemas[s];
        let checked = u.privileges.as_ref().and_then(|p| p.get(s));
        let schema_mask = checked.map_or([true; 4], |p| p.dml);
        for (name, table) in &schema.tables {
            let mask = checked
                .and_then(|p| {
                    p.tables
                        .iter()
                        .find(|(t, _)| t.eq_ignore_ascii_case(name))
                        .map(|(_, m)| *m)
                })
                .unwrap_or(schema_mask);
            let Some(privs) = privileges(mask) else {
                continue;
            };
            for dn in &table.data_nodes {
                let db = &config.data_nodes[dn].database;
                grants.push(format!(
                    "GRANT {privs} ON `{db}`.`{}` TO {account}",
                    name.to_ascii_lowercase()
                ));
            }
        }
        if let Some(dn) = &schema.data_node {
            if checked.is_some_and(|p| !p.tables.is_empty()) {
                return Err(format!(
                    "user {user}: <privileges> tables of schema {s}, which has a default dataNode, \
                     cannot be mirrored by additive grants"
                ));
            }
            let db = &config.data_nodes[dn].database;
            if let Some(privs) = privileges(schema_mask) {
                grants.push(format!("GRANT {privs} ON `{db}`.* TO {account}"));
            }
        }
    }
    // `LOCK TABLES` reaches the backends (the gateway builds it from the parse): the privilege
    // is database-wide in MariaDB, and the table privileges above still decide which tables
    // (SELECT for any lock), as manx's checks do.
    let mut databases: Vec<String> = grants
        .iter()
        .filter_map(|g| {
            let at = g.find(" ON `")? + 5;
            let end = at + g[at..].find('`')?;
            Some(g[at..end].to_string())
        })
        .collect();
    databases.sort();
    databases.dedup();
    for db in databases {
        grants.push(format!("GRANT LOCK TABLES ON `{db}`.* TO {account}"));
    }
    Ok(grants)
}

/// One case: who, in which sql_mode and schema, sends which COM_QUERY packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Index into [`USERS`].
    pub user: usize,
    /// Index into [`MODES`].
    pub mode: usize,
    /// Index into [`SCHEMAS`].
    pub schema: usize,
    /// The COM_QUERY payloads, in order.
    pub queries: Vec<Vec<u8>>,
}

/// SQL fragments that bytes 0x80..=0xFE stand for (index = byte - 0x80).
pub const FRAGMENTS: [&str; 127] = [
    "SELECT ",
    " FROM ",
    " WHERE ",
    "INSERT INTO ",
    " VALUES ",
    "UPDATE ",
    " SET ",
    "DELETE FROM ",
    "REPLACE INTO ",
    " ON DUPLICATE KEY UPDATE ",
    "CREATE TABLE ",
    "DROP TABLE ",
    "ALTER TABLE ",
    "TRUNCATE TABLE ",
    "RENAME TABLE ",
    " TO ",
    "CREATE INDEX i ON ",
    " UNION SELECT ",
    "_binary\"",
    " JOIN ",
    " ON ",
    " AS ",
    "WITH c AS (SELECT * FROM ",
    " IN (SELECT id FROM ",
    "(SELECT ",
    ")",
    "(",
    ", ",
    " = ",
    " OR 1=1",
    " LIMIT 1",
    " ORDER BY id",
    " FOR UPDATE",
    "EXPLAIN ",
    "SHOW TABLES",
    "SHOW CREATE TABLE ",
    "SHOW COLUMNS FROM ",
    "x\"",
    "USE ",
    "SET NAMES ",
    "SET sql_mode = ",
    "SET SESSION ",
    "SET @@session.",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SELECT * FROM ",
    "orders",
    "order_item",
    "customer",
    "item",
    "secret",
    "note",
    "pub",
    "vt",
    "`orders`",
    "ORDERS",
    "fz_victim.vt",
    "fz_victim.",
    "mysql.user",
    "information_schema.tables",
    "TESTDB.",
    "PUB.",
    "fz_db1.",
    "fz_pub.",
    "`fz_victim`.`vt`",
    "id",
    "v",
    "order_id",
    "1",
    "10",
    "'a'",
    "'",
    "\"",
    "`",
    "\\",
    "\\'",
    "''",
    "_utf8mb4'",
    "X'41'",
    "/*",
    "*/",
    "/*!",
    "/*!50000 ",
    "b'",
    "/*!100000 ",
    "/*!999999 ",
    "/*M!100100 ",
    "/*+ ",
    "-- ",
    "#",
    "\n",
    "B\"",
    "\u{a0}",
    "\u{3000}",
    ";",
    "/*!mycat:dataNode=fz1*/",
    "N\"",
    "/*!mycat:sql=",
    "/*!mycat:schema=PUB*/",
    "/*!mycat:db_type=master*/",
    "/*balance*/",
    "'NO_BACKSLASH_ESCAPES'",
    "'ANSI_QUOTES'",
    "$$",
    "CONCAT(@@sql_mode, ',ANSI_QUOTES')",
    "PREPARE s FROM ",
    "EXECUTE IMMEDIATE ",
    "GRANT ALL ON *.* TO evil",
    "CREATE USER evil",
    "DROP DATABASE fz_victim",
    "SET GLOBAL ",
    "SET PASSWORD = PASSWORD('x')",
    "trim (1)",
    " INTO OUTFILE '/tmp/mirror'",
    "substring/**/(1)",
    "point(1)",
    "now ()",
    "NEXT VALUE FOR ",
    "@@",
    "@a",
    "||",
    " ENGINE=InnoDB",
    " (id INT PRIMARY KEY, v VARCHAR(20), order_id INT)",
    "gbk",
    "\u{e9}",
    "SET STATEMENT max_statement_time=1 FOR ",
];

impl Case {
    /// The case `data` stands for (module docs); `None` when `data` has no header.
    pub fn decode(data: &[u8]) -> Option<Case> {
        let (&[u, m, s], body) = data.split_first_chunk::<3>()?;
        let user = u as usize % USERS.len();
        let mut schema = s as usize % SCHEMAS.len();
        if USERS[user] == "priv" && SCHEMAS[schema] == Some("PUB") {
            schema = 0;
        }
        let queries = body
            .split(|&b| b == 0xFF)
            .map(|piece| {
                let mut q = Vec::with_capacity(piece.len() * 2);
                for &b in piece {
                    if b < 0x80 {
                        q.push(b);
                    } else {
                        q.extend_from_slice(FRAGMENTS[b as usize - 0x80].as_bytes());
                    }
                }
                q
            })
            .filter(|q| !q.is_empty())
            .take(8)
            .collect();
        Some(Case {
            user,
            mode: m as usize % MODES.len(),
            schema,
            queries,
        })
    }

    /// The bytes that decode to a case of `user`, `mode`, `schema` sending `queries` as written
    /// (ASCII only; for seeds).
    pub fn encode(user: usize, mode: usize, schema: usize, queries: &[&str]) -> Vec<u8> {
        let mut out = vec![user as u8, mode as u8, schema as u8];
        for (i, q) in queries.iter().enumerate() {
            assert!(q.is_ascii(), "seed queries are ASCII: {q:?}");
            if i > 0 {
                out.push(0xFF);
            }
            out.extend_from_slice(q.as_bytes());
        }
        out
    }

    /// A readable form, for findings.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "user {} (mirror {}), sql_mode {:?}, schema {:?}:",
            USERS[self.user],
            mirror_account(USERS[self.user]),
            MODES[self.mode],
            SCHEMAS[self.schema]
        );
        for q in &self.queries {
            let _ = write!(s, "\n  {:?}", String::from_utf8_lossy(q));
        }
        s
    }
}

/// What a case showed.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Statements (packets) the gateway answered without an error.
    pub ok: usize,
    /// Packets it answered with an error (manx's refusal or the backend's).
    pub refused: usize,
}

/// The backend server, its mirror accounts, and one gateway per manx user.
pub struct World {
    admin: mysql_async::Opts,
    /// The gateway port of each user of [`USERS`].
    pub ports: Vec<u16>,
    /// The config directory of each gateway (kept for reading).
    pub dirs: Vec<PathBuf>,
    /// Cases since the tables were last recreated.
    since_reset: usize,
    /// The last case had a word of DDL: check the tables before the next one.
    structure_may_have_changed: bool,
}

fn admin_opts(port: u16) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("manx"))
        .pass(Some("manx"))
        .prefer_socket(false)
        .into()
}

async fn denied_count(admin: &mut mysql_async::Conn) -> u64 {
    let row: Option<(String, u64)> = admin
        .query_first("SHOW GLOBAL STATUS LIKE 'Access_denied_errors'")
        .await
        .expect("read Access_denied_errors");
    row.expect("MariaDB has Access_denied_errors").1
}

impl World {
    /// Sets up the databases, the mirror accounts and one gateway per user against the MariaDB
    /// server on 127.0.0.1:`port` (admin account `manx`/`manx`, `lower_case_table_names = 1`),
    /// with config directories under `dir`. Panics on any set-up failure.
    pub async fn start(port: u16, dir: &Path, repo: &Path) -> World {
        let admin = admin_opts(port);
        let mut world = World {
            admin,
            ports: Vec::new(),
            dirs: Vec::new(),
            since_reset: 0,
            structure_may_have_changed: false,
        };
        world.reset().await;
        let mut conn = mysql_async::Conn::new(world.admin.clone()).await.unwrap();
        let template = Self::write_config(&dir.join("template"), repo, port, "manx");
        let config = Config::load(&template).unwrap_or_else(|e| panic!("mirror config:\n{e}"));
        for user in USERS {
            let account = mirror_account(user);
            conn.query_drop(format!(
                "DROP USER IF EXISTS '{account}'@'%'; \
                 CREATE USER '{account}'@'%' IDENTIFIED BY '{account}'"
            ))
            .await
            .unwrap();
            for g in mirror_grants(&config, user).unwrap() {
                conn.query_drop(&g)
                    .await
                    .unwrap_or_else(|e| panic!("{g}: {e}"));
            }
            let d = Self::write_config(&dir.join(user), repo, port, &account);
            let config = Config::load(&d).unwrap_or_else(|e| panic!("mirror config:\n{e}"));
            let server = Arc::new(Server::new(config, Timeouts::default()).unwrap());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            world.ports.push(listener.local_addr().unwrap().port());
            world.dirs.push(d);
            tokio::spawn(server.serve(listener, std::future::pending()));
        }
        world
    }

    fn write_config(dir: &Path, repo: &Path, port: u16, account: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let schema = SCHEMA_XML
            .replace("@PORT@", &port.to_string())
            .replace("@USER@", account);
        std::fs::write(dir.join("schema.xml"), schema).unwrap();
        std::fs::write(dir.join("server.xml"), SERVER_XML).unwrap();
        for f in [
            "rule.xml",
            "autopartition-long.txt",
            "partition-hash-int.txt",
        ] {
            std::fs::copy(repo.join(f), dir.join(f)).unwrap();
        }
        dir.to_path_buf()
    }

    /// Recreates every database of [`DATABASES`] with every table of [`TABLES`] and two rows
    /// in each (ids 1 and 2; mirror grants on tables survive `DROP DATABASE`).
    pub async fn reset(&mut self) {
        let mut conn = mysql_async::Conn::new(self.admin.clone()).await.unwrap();
        let mut sql = String::new();
        for db in DATABASES {
            let _ = write!(sql, "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; ");
            for t in TABLES {
                let _ = write!(
                    sql,
                    "CREATE TABLE {db}.{t} (id INT PRIMARY KEY, v VARCHAR(20), order_id INT); \
                     INSERT INTO {db}.{t} VALUES (1, 'one', 1), (2, 'two', 2); "
                );
            }
            // Stored functions named like built-ins: a call that reaches one (MariaDB reads
            // `now ()` or `point(1)` as a stored function) needs EXECUTE, which no mirror
            // account has, so it counts as a denial.
            for f in STORED_FUNCTIONS {
                let _ = write!(
                    sql,
                    "CREATE FUNCTION {db}.`{f}`(x INT) RETURNS INT DETERMINISTIC NO SQL RETURN x; "
                );
            }
        }
        conn.query_drop(sql).await.unwrap();
        self.since_reset = 0;
    }

    /// Whether every database still has exactly the tables and columns [`World::reset`] made.
    async fn intact(admin: &mut mysql_async::Conn) -> bool {
        let shape: Option<(i64, i64)> = admin
            .query_first(
                "SELECT COUNT(DISTINCT TABLE_SCHEMA, TABLE_NAME), COUNT(*) \
                 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA LIKE 'fz\\_%'",
            )
            .await
            .unwrap_or(None);
        let tables = (DATABASES.len() * TABLES.len()) as i64;
        shape == Some((tables, tables * 3))
    }

    /// Runs `case` and judges it: `Err` describes a finding (a denial on the backend, a
    /// gateway that stopped answering, or a hang over 20 s).
    pub async fn run(&mut self, case: &Case) -> Result<Outcome, String> {
        self.run_on(case, case.user).await
    }

    /// [`World::run`] on the gateway of user `USERS[gateway]` (whose mirror account the
    /// backend sees), logged in as the case's user: a mismatch shows the judge can fail.
    pub async fn run_on(&mut self, case: &Case, gateway: usize) -> Result<Outcome, String> {
        let mut admin = mysql_async::Conn::new(self.admin.clone())
            .await
            .map_err(|e| format!("admin connection: {e}"))?;
        if self.since_reset >= 200
            || (self.structure_may_have_changed && !Self::intact(&mut admin).await)
        {
            self.reset().await;
        }
        self.since_reset += 1;
        self.structure_may_have_changed = case.queries.iter().any(|q| changes_structure(q));
        let before = denied_count(&mut admin).await;
        let port = self.ports[gateway];
        let result = tokio::time::timeout(Duration::from_secs(20), self.send(case, port)).await;
        let after = denied_count(&mut admin).await;
        let _ = admin.disconnect().await;
        let outcome = match result {
            Err(_) => return Err(format!("no answer within 20 s: {}", case.describe())),
            Ok(Err(e)) => return Err(format!("{e}: {}", case.describe())),
            Ok(Ok(o)) => o,
        };
        if after != before {
            return Err(format!(
                "the backend counted {} access-denied error(s): {}",
                after - before,
                case.describe()
            ));
        }
        Ok(outcome)
    }

    async fn send(&self, case: &Case, port: u16) -> Result<Outcome, String> {
        let user = USERS[case.user];
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(user))
            .db_name(SCHEMAS[case.schema])
            .prefer_socket(false);
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .map_err(|e| format!("login: {e}"))?;
        let mut outcome = Outcome::default();
        if let Some(mode) = MODES[case.mode] {
            conn.query_drop(format!("SET sql_mode = '{mode}'"))
                .await
                .map_err(|e| format!("SET sql_mode = '{mode}': {e}"))?;
        }
        for q in &case.queries {
            match conn.query_drop(q.as_slice()).await {
                Ok(()) => outcome.ok += 1,
                Err(mysql_async::Error::Server(e)) => {
                    if e.message.contains("user 'mirror_") {
                        return Err(format!(
                            "the backend refused the mirror account ({} {}): {}",
                            e.code, e.message, "see the case"
                        ));
                    }
                    outcome.refused += 1;
                }
                Err(e) => {
                    return Err(format!(
                        "the gateway dropped the session on {:?}: {e}",
                        String::from_utf8_lossy(q)
                    ));
                }
            }
        }
        let _ = conn.disconnect().await;
        Ok(outcome)
    }
}

/// Whether a packet may change tables (then the tables are recreated before the case runs, so
/// that every case starts from the same world).
fn changes_structure(q: &[u8]) -> bool {
    let lower = q.to_ascii_lowercase();
    ["drop", "alter", "rename", "truncate", "create"]
        .iter()
        .any(|w| lower.windows(w.len()).any(|x| x == w.as_bytes()))
}

/// Seed cases: each class of issue 17 in a few spellings, as [`Case::encode`] bytes.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let classes: &[&[&str]] = &[
        &["SELECT * FROM orders WHERE id = 1"],
        &["SELECT * FROM secret"],
        &["SELECT * FROM fz_victim.vt"],
        &["SELECT * FROM orders JOIN customer ON orders.id = customer.id"],
        &["SELECT v FROM orders UNION SELECT v FROM fz_victim.vt"],
        &["SELECT (SELECT v FROM secret LIMIT 1) FROM orders"],
        &["WITH c AS (SELECT * FROM secret) SELECT * FROM c"],
        &["INSERT INTO orders (id, v, order_id) VALUES (10, 'x', 1)"],
        &["INSERT INTO orders (id, v, order_id) SELECT id, v, order_id FROM secret"],
        &["REPLACE INTO customer (id, v) VALUES (1, 'r')"],
        &["INSERT INTO customer (id, v) VALUES (1, 'd') ON DUPLICATE KEY UPDATE v = 'u'"],
        &["UPDATE item SET v = 'u' WHERE id = 1"],
        &["UPDATE note SET v = 'u'"],
        &["DELETE FROM note WHERE id = 1"],
        &["DELETE FROM note"],
        &["DROP TABLE note"],
        &["TRUNCATE TABLE orders"],
        &["ALTER TABLE order_item ADD COLUMN w INT"],
        &["CREATE INDEX i ON order_item (v)"],
        &["RENAME TABLE order_item TO order_item2"],
        &["SELECT * FROM pub", "SELECT * FROM PUB.pub"],
        &["SELECT * FROM pub; SELECT * FROM fz_victim.vt"],
        &["/*!40101 DELETE FROM secret */"],
        &["/*!mycat:dataNode=fz2*/ SELECT * FROM secret"],
        &["/*!mycat:sql=SELECT 1*/ SELECT * FROM fz_victim.vt"],
        &["SELECT * FROM orders WHERE v = 'x\\' UNION SELECT user, 1, 1 FROM mysql.user -- '"],
        &["SELECT * FROM orders WHERE v = \"x\" OR 1=1"],
        &["SET sql_mode = 'ANSI_QUOTES'", "SELECT \"v\" FROM orders"],
        &["SET NAMES utf8mb4", "SELECT 1"],
        &[
            "SET autocommit = 0",
            "DELETE FROM orders WHERE id = 1",
            "ROLLBACK",
        ],
        &["BEGIN", "UPDATE orders SET v = 'b' WHERE id = 2", "COMMIT"],
        &[
            "SHOW TABLES",
            "SHOW CREATE TABLE orders",
            "SHOW COLUMNS FROM orders LIKE 'v'",
        ],
        &["DESC orders", "EXPLAIN SELECT * FROM orders"],
        &["SELECT * FROM information_schema.tables"],
        &["USE PUB", "SELECT * FROM secret"],
        &["SET STATEMENT max_statement_time=1 FOR DELETE FROM pub"],
        &["SET @a = 1", "SELECT @a"],
        &["SELECT * FROM orders WHERE id IN (1, 2) ORDER BY id LIMIT 1"],
        &["SELECT COUNT(*), MAX(v) FROM orders GROUP BY order_id"],
        &["INSERT INTO order_item (id, v, order_id) VALUES (5, 'c', 2)"],
        &["CREATE TABLE IF NOT EXISTS pub2 (id INT PRIMARY KEY)"],
        // Attacker round 3: SHOW filters re-printed from the parse, WHERE( on server SHOWs,
        // CTE names hiding tables.
        &[
            "SHOW TABLES WHERE Tables_in_PUB = 'x\\\\' OR Tables_in_PUB = ' /*M! UNION SELECT v FROM fz_victim.vt */ #'",
        ],
        &["SHOW TABLE STATUS WHERE Name = 'x\\\\' OR Name = ' UNION SELECT 1 #'"],
        &["SHOW VARIABLES WHERE(Variable_name='version' AND (SELECT v FROM fz_victim.vt)='one')"],
        &["SHOW STATUS LIKE 'Uptime'", "SHOW WARNINGS LIMIT 1"],
        &["WITH secret AS (SELECT * FROM secret) SELECT * FROM secret"],
        &[
            "INSERT INTO orders SELECT * FROM (WITH orders AS (SELECT 5 AS id, 'x' AS v, 1 AS order_id) SELECT * FROM orders) d",
        ],
        &["SELECT * FROM `dual`"],
        &[
            "SET default_storage_engine = MRG_MyISAM",
            "CREATE TABLE order_item (id INT)",
        ],
        // Found by the fuzz target: annotations sending tables outside the schema's nodes.
        &["/*!mycat:dataNode=fz2*/ SELECT * FROM secr"],
        &["/*!mycat:dataNode=fz1*/ SELECT * FROM secret"],
        &["/*!mycat:sql=SELECT * FROM orders WHERE id = 2*/ SELECT * FROM item"],
        &[
            "/*!mycat:dataNode=fz1*/ SHOW TABLES",
            "/*!mycat:dataNode=fz1*/ DESC secret",
        ],
        &["/*!mycat:dataNode=fz1*/ SELECT * FROM TESTDB.item"],
        // Found by the fuzz target: without a current schema, server SHOWs and SET went to a
        // node of the first configured schema, whoever asked.
        &["SHOW STATUS LIKE 'Uptime'", "SHOW WARNINGS", "SET @a = 1"],
        // Attacker rounds 4 and 5: built-ins spelled as stored-function calls.
        &[
            "SELECT now ()",
            "SELECT `now`(1)",
            "SELECT count/**/(1)",
            "SELECT f_side(1)",
        ],
        &[
            "SELECT trim (1)",
            "SELECT substring/**/(1)",
            "SELECT substr\n(1)",
        ],
        &[
            "SELECT point(1)",
            "SELECT linestring(1)",
            "SET @x = trim (1)",
        ],
        &["INSERT INTO orders (id, v, order_id) VALUES ('7002 x', 'a', 1)"],
    ];
    for (i, queries) in classes.iter().enumerate() {
        for user in 0..USERS.len() {
            // In TESTDB or PUB, and without a current schema.
            out.push(Case::encode(user, i % MODES.len(), i % 2, queries));
            out.push(Case::encode(user, i % MODES.len(), 2, queries));
        }
    }
    out
}

/// A small deterministic generator (xorshift64*), for the fixed random sample of the CI test.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Case bytes: a header and up to four packets of up to 10 fragments or bytes, mostly
    /// fragments (a byte of plain ASCII one time in six).
    pub fn case(&mut self) -> Vec<u8> {
        let mut out = vec![self.next() as u8, self.next() as u8, self.next() as u8];
        let packets = 1 + self.next() % 4;
        for p in 0..packets {
            if p > 0 {
                out.push(0xFF);
            }
            for _ in 0..1 + self.next() % 10 {
                let r = self.next();
                if r.is_multiple_of(6) {
                    out.push(b" ,=()*'1;"[(r >> 8) as usize % 9]);
                } else {
                    out.push(0x80 + ((r >> 8) % 127) as u8);
                }
            }
        }
        out
    }
}

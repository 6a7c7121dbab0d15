//! Writing Mycat configuration directories for tests that do not start from the bundled
//! config (`write_config` in the parent module does): schema.xml and server.xml from their
//! bodies, the bundled rule.xml and map files beside them, and the XML elements tests repeat
//! (a user, a MariaDB or PostgreSQL writeHost/readHost, heartbeat properties).

use std::path::Path;

/// The bundled files a configuration directory needs besides schema.xml and server.xml: the
/// rule.xml the tests' `rule="mod-long"` etc. name, and the map files it reads.
pub const RULE_FILES: [&str; 3] = [
    "rule.xml",
    "autopartition-long.txt",
    "partition-hash-int.txt",
];

/// Every file of the bundled config (`server.xml`, `schema.xml` and [`RULE_FILES`]).
pub const BUNDLED_FILES: [&str; 5] = [
    "server.xml",
    "schema.xml",
    "rule.xml",
    "autopartition-long.txt",
    "partition-hash-int.txt",
];

/// `<?xml ...?><mycat:schema ...>{body}</mycat:schema>`: a whole schema.xml around `body`
/// (`<schema>`, `<dataNode>` and `<dataHost>` elements).
pub fn schema_xml(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<mycat:schema xmlns:mycat=\"http://io.mycat/\">\n{body}\n</mycat:schema>\n"
    )
}

/// `<?xml ...?><mycat:server ...>{body}</mycat:server>`: a whole server.xml around `body`
/// (`<system>` and `<user>` elements).
pub fn server_xml(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<mycat:server xmlns:mycat=\"http://io.mycat/\">\n{body}\n</mycat:server>\n"
    )
}

/// Writes schema.xml and server.xml around `schema_body` and `server_body` ([`schema_xml`],
/// [`server_xml`]) into `dir`, with the bundled [`RULE_FILES`].
pub fn write_dir(dir: &Path, schema_body: &str, server_body: &str) {
    super::copy_rule_files(dir);
    std::fs::write(dir.join("schema.xml"), schema_xml(schema_body)).unwrap();
    std::fs::write(dir.join("server.xml"), server_xml(server_body)).unwrap();
}

/// A new temporary configuration directory written by [`write_dir`].
pub fn config_dir(schema_body: &str, server_body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_dir(dir.path(), schema_body, server_body);
    dir
}

/// A temporary copy of the bundled config (every file of [`BUNDLED_FILES`]).
pub fn bundled_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in BUNDLED_FILES {
        std::fs::copy(super::repo().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

/// Rewrites file `name` of configuration directory `dir` with `edit` applied to its text.
pub fn edit(dir: &Path, name: &str, edit: impl FnOnce(String) -> String) {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
}

/// A server.xml `<user>` with its password and schemas (comma-separated), Mycat's spelling.
pub fn user(name: &str, password: &str, schemas: &str) -> String {
    format!(
        r#"<user name="{name}"><property name="password">{password}</property><property name="schemas">{schemas}</property></user>"#
    )
}

/// A self-closing `<writeHost>` or `<readHost>` (`kind`) named `name` for the MariaDB server
/// at 127.0.0.1:`port`, logged in as the sandbox admin `manx`.
pub fn host(kind: &str, name: &str, port: u16) -> String {
    format!(r#"<{kind} host="{name}" url="127.0.0.1:{port}" user="manx" password="manx" />"#)
}

/// [`host`] for a PostgreSQL server at 127.0.0.1:`port` (a `jdbc:postgresql:` url, as
/// Mycat writes it).
pub fn postgres_host(kind: &str, name: &str, port: u16) -> String {
    format!(
        r#"<{kind} host="{name}" url="jdbc:postgresql://127.0.0.1:{port}/postgres" user="manx" password="manx" />"#
    )
}

/// A `<writeHost>` named `name` for the MariaDB server at 127.0.0.1:`port` holding the
/// `<readHost>` elements `read_hosts`.
pub fn write_host_with(name: &str, port: u16, read_hosts: &str) -> String {
    format!(
        r#"<writeHost host="{name}" url="127.0.0.1:{port}" user="manx" password="manx">{read_hosts}</writeHost>"#
    )
}

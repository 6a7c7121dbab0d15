//! Session state the client set (`SET NAMES`, `sql_mode`, user variables...): checked on a backend
//! when set, then replayed on every backend connection the session takes.

use futures::StreamExt;

use super::{Session, run_simple};
use crate::backend::{BackendConn, Response};
use crate::datahost::held::{self, Fresh};
use crate::frontend::error::MysqlError;
use crate::route::{SessionSet, SqlMode};

/// A string value as SQL that every `sql_mode` reads the same: quoted when it holds no quote or
/// backslash, else spelled in hex (a backslash means one thing under NO_BACKSLASH_ESCAPES and
/// another without, and the replay may run under either).
fn replay_literal(text: &str) -> String {
    if !text.contains(['\\', '\'']) {
        return format!("'{text}'");
    }
    let hex: String = text.bytes().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb4)")
}

/// The collation id of the `binary` character set: a value in it is bytes, not text.
const BINARY_COLLATION: u16 = 63;

/// `X'<hex>'`: a binary string holding `bytes`, as MariaDB reads it in any `sql_mode`.
fn hex_literal(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
    format!("X'{hex}'")
}

/// A geometry value as the server's text protocol sends it (its internal form: a 4-byte
/// little-endian SRID, then the WKB) written as an expression that makes the same geometry
/// again, `ST_GeomFromWKB(X'<wkb>', srid)`: replayed as a binary string, it would be a BLOB,
/// which the spatial functions refuse (4079). Bytes too short to be one are a binary string.
fn geometry_literal(bytes: &[u8]) -> String {
    match bytes.split_first_chunk::<4>() {
        Some((srid, wkb)) if !wkb.is_empty() => format!(
            "ST_GeomFromWKB({}, {})",
            hex_literal(wkb),
            u32::from_le_bytes(*srid)
        ),
        _ => hex_literal(bytes),
    }
}

impl Session {
    /// The statements that put a fresh backend connection in the session's state.
    pub(super) fn state_statements(items: &[SessionSet]) -> Vec<String> {
        let mut out: Vec<String> = items
            .iter()
            .filter(|i| i.standalone)
            .map(|i| format!("SET {}", i.assignment))
            .collect();
        let joined: Vec<&str> = items
            .iter()
            .filter(|i| !i.standalone)
            .map(|i| i.assignment.as_str())
            .collect();
        if !joined.is_empty() {
            out.push(format!("SET {}", joined.join(", ")));
        }
        out
    }

    /// The statements that put back, on the connection that ran a refused SET, every variable
    /// `items` named: the session's value where it set one (`state`), else the server's
    /// default (`DEFAULT` for a system variable, NULL for a user variable). A standalone item
    /// (`NAMES`, `TRANSACTION`) is put back only from the session's value: it is never itself
    /// refused after running, and its default is the connection's own.
    fn restore_statements(state: &[SessionSet], items: &[SessionSet]) -> Vec<String> {
        let back: Vec<SessionSet> = items
            .iter()
            .filter_map(|item| match state.iter().find(|s| s.key == item.key) {
                Some(s) => Some(s.clone()),
                None if item.standalone => None,
                None => Some(SessionSet {
                    key: item.key.clone(),
                    assignment: match item.key.starts_with('@') {
                        true => format!("{} = NULL", item.key),
                        false => format!("{} = DEFAULT", item.key),
                    },
                    standalone: false,
                    evaluate: false,
                }),
            })
            .collect();
        Self::state_statements(&back)
    }

    /// After a refused SET could not be undone on the connection that ran it (`failed`): that
    /// connection, when the session holds it, is closed rather than used again (its variables
    /// are unknown, `sql_mode` among them, which the gateway's reading of later statements
    /// relies on); a transaction it was part of is rolled back on every dataNode, as a broken
    /// connection ends it. A fresh connection goes back to its pool, which resets it. Returns
    /// the error to answer: the refusal, with the rollback named when there was one.
    async fn forget_checked(
        &mut self,
        node: &str,
        failed: crate::backend::BackendError,
        refusal: MysqlError,
    ) -> MysqlError {
        tracing::warn!(connection = self.id, %node, error = %failed, "a refused SET could not be undone: the connection is closed");
        if !self.held.forget(node) {
            return refusal;
        }
        let _ = self.end_transaction("ROLLBACK").await;
        MysqlError::new(
            refusal.code,
            &refusal.state,
            format!(
                "{}; the connection that checked it could not be put back and the transaction was rolled back",
                refusal.message
            ),
        )
    }

    /// Puts a connection just taken from a pool in the session's state.
    pub(super) async fn apply_state(
        state: &[SessionSet],
        conn: &mut dyn BackendConn,
        node: &str,
    ) -> Result<(), MysqlError> {
        Ok(held::set_up(conn, node, &Self::state_statements(state)).await?)
    }

    /// A `SET` of session state: checked on a backend connection (so a bad value gets the
    /// server's error now, as MySQL gives it), user variables set from expressions evaluated
    /// once, then kept for every connection the session takes and applied to those it holds.
    pub(super) async fn set_state(&mut self, mut items: Vec<SessionSet>) -> Result<(), MysqlError> {
        if items.is_empty() {
            return Ok(());
        }
        // `SET @OLD_AUTOCOMMIT = @@AUTOCOMMIT` (mysqldump --no-autocommit): the session's
        // autocommit is the gateway's, not the backend connection's (always on).
        for item in items.iter_mut().filter(|i| i.key.starts_with('@')) {
            let value = item
                .assignment
                .split_once('=')
                .map_or("", |(_, v)| v.trim())
                .to_ascii_lowercase();
            if matches!(
                value.as_str(),
                "@@autocommit" | "@@session.autocommit" | "@@local.autocommit"
            ) {
                item.assignment = format!("{} = {}", item.key, u8::from(self.autocommit));
                item.evaluate = false;
            }
            // `SET @saved_cs_client = @@character_set_client` (mysqldump): the session's
            // character sets are the gateway's, not the backend connection's (always utf8mb4).
            let variable = value
                .trim_start_matches("@@")
                .trim_start_matches("session.")
                .trim_start_matches("local.");
            if value.starts_with("@@")
                && let Some(v) = charset_variable(&self.slot.charsets(), variable)
            {
                item.assignment = format!("{} = {v}", item.key);
                item.evaluate = false;
            }
        }
        // A node of the current schema, else of one of the user's schemas: never a node the
        // user has no schema on (its database is none of the user's business, and a backend
        // account scoped to the user's databases could not use it).
        let generation = self.generation();
        let router = &generation.router;
        let node = self
            .schema
            .as_deref()
            .and_then(|s| router.schema(s))
            .and_then(|s| s.nodes.first().cloned())
            .or_else(|| {
                let view = self.view();
                let access = view.access?;
                access
                    .schemas
                    .iter()
                    .find_map(|s| router.schema(s).and_then(|s| s.nodes.first().cloned()))
            })
            .ok_or_else(|| MysqlError::new(1105, "HY000", "no dataNode to check SET on"))?;
        // The session's own connection to the node (pinned to its transaction, else kept),
        // else a fresh one on the writeHost with the session's state: the same choice as the
        // gateway's other statements for the session make (`HeldConns::lease`).
        let state = &self.state;
        let mut lease = self
            .held
            .lease(
                generation.cluster.as_ref(),
                &node,
                None,
                Fresh::Session,
                || Self::state_statements(state),
            )
            .await?;
        let conn = lease.conn();
        // Character sets are the session's own: the backend only gets its connection's
        // character set and collation, from the table (module `crate::charset`).
        let charsets = charset_items(self.slot.charsets(), &mut items, conn).await?;
        for sql in Self::state_statements(&items) {
            run_simple(conn, &sql)
                .await
                .map_err(|e| MysqlError::backend(format!("dataNode {node}"), &e))?;
        }
        // MySQL: a SET one of whose assignments fails changes no variable. Checks run on what
        // the server settled on, so a refusal puts back every variable the statement named
        // (`restore_statements`), and nothing of it reaches the session before all passed.
        let mut refused: Option<MysqlError> = None;
        let mut mode = None;
        for item in items.iter_mut().filter(|i| i.evaluate) {
            // What the server settled on: `@x`, or `@@session.name` for a system variable.
            let read = if item.key.starts_with('@') {
                item.key.clone()
            } else {
                format!("@@session.{}", item.key)
            };
            let read_back = read_value(conn, &read).await;
            // A user variable that cannot be read back is NULL; a system variable keeps the
            // value as written (a PostgreSQL dataNode answers only the variables it maps).
            let value = match read_back {
                Some(v) => v,
                None if item.key.starts_with('@') => "NULL".to_string(),
                None => item
                    .assignment
                    .split_once('=')
                    .map_or(String::new(), |(_, v)| v.trim().to_string()),
            };
            if item.key == "sql_mode" {
                let text = crate::route::unquote(&value);
                match SqlMode::from_server(text) {
                    Ok(m) => mode = Some(m),
                    Err(bad) => {
                        refused = Some(MysqlError::new(
                            1235,
                            "42000",
                            format!(
                                "sql_mode {bad} is not supported by the gateway: its statements could not be checked as the backend parses them"
                            ),
                        ));
                        break;
                    }
                }
            }
            if item.key.ends_with("storage_engine")
                && let Err(e) = crate::route::check_storage_engine(&value)
            {
                refused = Some(e.into());
                break;
            }
            item.assignment = format!("{} = {value}", item.key);
            item.evaluate = false;
        }
        if let Some(e) = refused {
            for sql in Self::restore_statements(&self.state, &items) {
                if let Err(failed) = run_simple(conn, &sql).await {
                    // A connection whose state is unknown must not serve the session again.
                    return Err(self.forget_checked(&node, failed, e).await);
                }
            }
            return Err(e);
        }
        // From here the SET stands on the checking connection: the session takes it at once
        // (its mode, its replayed state), so that whatever happens to the other connections
        // it holds, the gateway reads statements as every connection it will use reads them.
        if let Some(mode) = mode {
            self.sql_mode = mode;
            self.slot.set_sql_mode(mode);
        }
        for item in &items {
            self.state.retain(|s| s.key != item.key);
            self.state.push(item.clone());
        }
        if let Some(charsets) = charsets {
            self.slot.set_charsets(charsets);
        }
        // `wait_timeout` is the gateway's own idle limit of the client connection too
        // (`limits::idle_deadline`): a plain number as written, else what the server settled
        // on (`DEFAULT`, an expression).
        if let Some(item) = items.iter().find(|i| i.key == "wait_timeout") {
            let written = item
                .assignment
                .split_once('=')
                .map(|(_, v)| v.trim().trim_matches('\''))
                .and_then(|v| v.parse::<u64>().ok());
            let seconds = match written {
                Some(n) => Some(n),
                None => read_value(conn, "@@session.wait_timeout")
                    .await
                    .and_then(|v| v.parse::<u64>().ok()),
            };
            if let Some(n) = seconds {
                self.handle.set_wait_timeout(n);
            }
        }
        // Connections the session holds get it too (the checking one already has it). A held
        // connection that cannot take it is closed, never used again in another state (a
        // transaction it was part of is rolled back on every dataNode, as a broken connection
        // ends it); the SET is answered with its error.
        let statements = Self::state_statements(&items);
        if let Err((e, pinned)) = self.held.set_on_held(&node, &statements).await {
            if pinned {
                let _ = self.end_transaction("ROLLBACK").await;
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// Takes the character set of the client's handshake (or of its COM_CHANGE_USER, which the
    /// caller put in the slot) into the session's state, once: a client that is not UTF-8 gets
    /// its connection's character set replayed on the backends (client and results stay
    /// utf8mb4, the gateway converts).
    pub(super) fn adopt_handshake_charset(&mut self) {
        if self.slot.take_handshake_charset().is_none() {
            return;
        }
        let charsets = self.slot.charsets();
        self.state.retain(|s| s.key != "names");
        if !charsets.is_default() {
            self.state.push(SessionSet {
                key: "names".to_string(),
                assignment: charsets.backend_assignment(),
                standalone: true,
                evaluate: false,
            });
        }
    }
}

/// The session variables that name character sets: kept by the session, never set on a
/// backend as the client wrote them.
const CHARSET_KEYS: &[&str] = &[
    "names",
    "character_set_client",
    "character_set_results",
    "character_set_connection",
    "collation_connection",
];

/// Character sets MariaDB has that the gateway does not convert (refused with 1235, where a
/// name MariaDB does not know gets its 1115).
const UNCONVERTED_CHARSETS: &[&str] = &[
    "binary", "ucs2", "utf16", "utf16le", "utf32", "filename",
    // Their WHATWG tables (encoding_rs) differ from MariaDB's for some characters (sjis
    // 0x8160, big5 C7xx, ujis A1C1; gb2312 would be read as all of GBK): converting them
    // would change data silently.
    "gb2312", "big5", "sjis", "ujis", "eucjpms",
];

/// Character sets MariaDB refuses as `character_set_client` (its characters are not at least
/// one byte each, or it is not a character set of text): 1231, as MariaDB answers.
const NOT_CLIENT_CHARSETS: &[&str] = &["filename", "ucs2", "utf16", "utf16le", "utf32"];

/// MariaDB's 1231 for `character_set_client` set to `value` (written as MariaDB names it:
/// `SET NAMES` and `SET CHARACTER SET` by the character set's name, the variable by the value
/// as written) when that is a character set MariaDB refuses for a client
/// ([`NOT_CLIENT_CHARSETS`]); `None` otherwise.
fn not_a_client_charset(value: &str, as_written: bool) -> Option<MysqlError> {
    let name = crate::route::unquote(value.trim());
    let lower = name.to_ascii_lowercase();
    NOT_CLIENT_CHARSETS.contains(&lower.as_str()).then(|| {
        MysqlError::new(
            1231,
            "42000",
            format!(
                "Variable 'character_set_client' can't be set to the value of '{}'",
                if as_written { name } else { &lower }
            ),
        )
    })
}

/// The value of the character set variable `name` (lower case, without `@@`) in `cs`, as a
/// SQL literal; `None` for another variable.
fn charset_variable(cs: &crate::charset::ClientCharsets, name: &str) -> Option<String> {
    Some(match name {
        "character_set_client" => format!("'{}'", cs.client.name),
        "character_set_connection" => format!("'{}'", cs.connection.name),
        "character_set_results" => match cs.results {
            Some(r) => format!("'{}'", r.name),
            None => "NULL".to_string(),
        },
        "collation_connection" => format!("'{}'", cs.collation_name()),
        _ => return None,
    })
}

/// The character set named `value` (a word or a quoted string; `DEFAULT` is the gateway's
/// utf8mb4).
///
/// Errors: 1115 `Unknown character set` for a name MariaDB does not know, 1235 for one the
/// gateway does not convert or a value that is not a name (a number, a hex string, an
/// expression).
fn charset_named(value: &str) -> Result<&'static crate::charset::Charset, MysqlError> {
    use crate::charset::{Charset, utf8mb4};
    let name = crate::route::unquote(value.trim());
    if name.eq_ignore_ascii_case("DEFAULT") && !value.trim().starts_with(['\'', '"']) {
        return Ok(utf8mb4());
    }
    let named = name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !named {
        return Err(MysqlError::new(
            1235,
            "42000",
            format!(
                "the character set {value} is not supported by the gateway: a character set is set by its name"
            ),
        ));
    }
    if let Some(cs) = Charset::by_name(name) {
        return Ok(cs);
    }
    if UNCONVERTED_CHARSETS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(MysqlError::new(
            1235,
            "42000",
            format!(
                "the client character set {name} is not supported by the gateway (it converts {})",
                crate::charset::CHARSETS
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Err(MysqlError::new(
        1115,
        "42000",
        format!("Unknown character set: '{name}'"),
    ))
}

/// Takes the character set settings out of `items` (`SET NAMES`, `SET CHARACTER SET`, `SET
/// character_set_client = ...`, ...) and applies them to `cs`, MySQL's rules: NAMES sets all
/// three (and the collation), CHARACTER SET the client and results ones (the connection's
/// becomes the database's, utf8mb4 here), each variable its own. A value from a user
/// variable is read on `conn`. In their place goes one item that sets the backend connection
/// ([`crate::charset::ClientCharsets::backend_assignment`]). `None` when `items` set none.
///
/// Errors: those of [`charset_named`]; 1273 `Unknown collation` for a collation that is not
/// of its character set's form.
async fn charset_items(
    mut cs: crate::charset::ClientCharsets,
    items: &mut Vec<SessionSet>,
    conn: &mut dyn BackendConn,
) -> Result<Option<crate::charset::ClientCharsets>, MysqlError> {
    use crate::charset::{Charset, ClientCharsets, utf8mb4};
    if !items.iter().any(|i| CHARSET_KEYS.contains(&i.key.as_str())) {
        return Ok(None);
    }
    let unknown_collation = |c: &str| {
        MysqlError::new(
            1273,
            "HY000",
            format!("Unknown collation: '{}'", crate::route::unquote(c)),
        )
    };
    for item in items
        .iter()
        .filter(|i| CHARSET_KEYS.contains(&i.key.as_str()))
    {
        // Comments are white space here, as MariaDB reads them (`SET NAMES latin1 /* c */`).
        let assignment = crate::route::without_comments(&item.assignment);
        if item.key == "names" {
            let words: Vec<&str> = assignment.split_whitespace().collect();
            let names = words
                .first()
                .is_some_and(|w| w.eq_ignore_ascii_case("NAMES"));
            let at = if words
                .first()
                .is_some_and(|w| w.eq_ignore_ascii_case("CHARACTER"))
            {
                2
            } else {
                1
            };
            let written = words.get(at).copied().unwrap_or_default();
            if let Some(e) = not_a_client_charset(written, false) {
                return Err(e);
            }
            let charset = charset_named(written)?;
            if names {
                cs = ClientCharsets::all(charset);
                if let Some(collation) = words.get(at + 2) {
                    let name = crate::route::unquote(collation).to_ascii_lowercase();
                    if Charset::of_collation(&name).is_none_or(|c| !std::ptr::eq(c, charset)) {
                        return Err(unknown_collation(collation));
                    }
                    cs.collation = Some(name);
                }
            } else {
                cs.client = charset;
                cs.results = Some(charset);
                cs.connection = utf8mb4();
                cs.collation = None;
                cs.collation_id = None;
                cs.connection_other = None;
            }
            continue;
        }
        let written = assignment
            .split_once('=')
            .map_or("", |(_, v)| v.trim())
            .to_string();
        let value = match written.strip_prefix('@') {
            Some(var) if !var.starts_with('@') => read_value(conn, &written)
                .await
                .unwrap_or_else(|| "NULL".to_string()),
            _ => written,
        };
        // `CONVERT(X'..' USING utf8mb4)` is how a value with a quote or backslash reads back:
        // no character set name holds one.
        let null = value.eq_ignore_ascii_case("NULL");
        match item.key.as_str() {
            // `binary` converts nothing, as NULL (mysqldump sets it around SHOW CREATE).
            "character_set_results"
                if null || crate::route::unquote(&value).eq_ignore_ascii_case("binary") =>
            {
                cs.results = None
            }
            "character_set_results" => cs.results = Some(charset_named(&value)?),
            "character_set_client" => {
                if let Some(e) = not_a_client_charset(&value, true) {
                    return Err(e);
                }
                cs.client = charset_named(&value)?
            }
            "character_set_connection" => {
                // Only the backend uses the connection's character set: one the gateway does
                // not convert (ucs2, utf16, ...) is the backend's to check, by a checked name.
                let name = crate::route::unquote(&value).to_ascii_lowercase();
                match charset_named(&value) {
                    Ok(c) => {
                        cs.connection = c;
                        cs.connection_other = None;
                    }
                    Err(_) if crate::charset::valid_name(&name) => cs.connection_other = Some(name),
                    Err(e) => return Err(e),
                }
                cs.collation = None;
                cs.collation_id = None;
            }
            _ => {
                // collation_connection: any collation the backend has, by a checked name.
                let name = crate::route::unquote(&value).to_ascii_lowercase();
                if name == "default" {
                    cs.connection = utf8mb4();
                    cs.collation = None;
                } else if !crate::charset::valid_name(&name) || !name.contains('_') {
                    return Err(unknown_collation(&value));
                } else {
                    if let Some(c) = Charset::of_collation(&name) {
                        cs.connection = c;
                    }
                    cs.collation = Some(name);
                }
                cs.connection_other = None;
                cs.collation_id = None;
            }
        }
    }
    items.retain(|i| !CHARSET_KEYS.contains(&i.key.as_str()));
    items.push(SessionSet {
        key: "names".to_string(),
        assignment: cs.backend_assignment(),
        standalone: true,
        evaluate: false,
    });
    Ok(Some(cs))
}

/// The value of the expression `read` (`@x`, `@@session.name`) on `conn`, written as a
/// literal that sets it again (numbers bare, strings quoted, `NULL`); `None` when the server
/// did not answer with a row.
async fn read_value(conn: &mut dyn BackendConn, read: &str) -> Option<String> {
    let sql = format!("SELECT {read}");
    let Ok(Response::Rows { columns, mut rows }) = conn.query(&sql).await else {
        return None;
    };
    let row = rows.next().await;
    let numeric = columns.first().is_some_and(|c| {
        matches!(
            c.column_type,
            crate::backend::ColumnType::MYSQL_TYPE_LONGLONG
                | crate::backend::ColumnType::MYSQL_TYPE_LONG
                | crate::backend::ColumnType::MYSQL_TYPE_NEWDECIMAL
                | crate::backend::ColumnType::MYSQL_TYPE_DOUBLE
        )
    });
    let geometry = columns
        .first()
        .is_some_and(|c| c.column_type == crate::backend::ColumnType::MYSQL_TYPE_GEOMETRY);
    let binary = columns
        .first()
        .is_some_and(|c| c.charset == BINARY_COLLATION);
    while rows.next().await.is_some() {}
    match row {
        Some(Ok(r)) => Some(match r.into_iter().next() {
            Some(crate::backend::Value::Bytes(b)) if geometry => geometry_literal(&b),
            Some(crate::backend::Value::Bytes(b)) if binary && !numeric => hex_literal(&b),
            Some(crate::backend::Value::Bytes(b)) => {
                let text = String::from_utf8_lossy(&b).into_owned();
                if numeric { text } else { replay_literal(&text) }
            }
            Some(crate::backend::Value::Null) | None => "NULL".to_string(),
            Some(other) => replay_literal(&other.to_text().unwrap_or_default()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod replay_tests {
    use super::{geometry_literal, hex_literal};

    #[test]
    fn binary_and_geometry_values_replay_as_what_they_were() {
        assert_eq!(hex_literal(&[0xFF, 0x00]), "X'FF00'");
        // POINT(1 1) with SRID 4326: the SRID's 4 bytes, then the WKB.
        let mut g = 4326u32.to_le_bytes().to_vec();
        g.extend_from_slice(&[0x01, 0x01, 0, 0, 0]);
        assert_eq!(geometry_literal(&g), "ST_GeomFromWKB(X'0101000000', 4326)");
        assert_eq!(geometry_literal(&[1, 2]), "X'0102'");
    }
}

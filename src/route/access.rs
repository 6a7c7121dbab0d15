//! Who may reach what: a user's logical schemas, `readOnly` and `<privileges check="true">`
//! (SPEC §3.4), decided on **every** table a statement names — joins, subqueries, UNION
//! branches, derived tables, CTE bodies, INSERT ... SELECT sources, multi-table UPDATE/DELETE —
//! with or without a current schema.
//!
//! Where manx differs from Mycat, deliberately (DECISIONS.md item 22): Mycat checks the mask of
//! the statement's first table only and DML only; manx checks each table, and DDL on a table
//! (CREATE, ALTER, DROP, TRUNCATE, RENAME, CREATE/DROP INDEX) needs all three write bits of its
//! mask (INSERT, UPDATE, DELETE). Table names in `<privileges>` match without regard to ASCII
//! case, as logical table names do.

use crate::route::Refusal;
use std::collections::{BTreeMap, BTreeSet};

use super::RouteError;
use crate::config::{Config, SchemaPrivileges, UserConfig};

/// How a statement uses one table, in the order of Mycat's `dml` mask digits (INSERT, UPDATE,
/// SELECT, DELETE) plus DDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableAccess {
    Insert,
    Update,
    Select,
    Delete,
    /// CREATE / ALTER / DROP / TRUNCATE / RENAME of the table or an index on it.
    Ddl,
}

impl TableAccess {
    /// Whether the access changes data or structure (refused for `readOnly` users).
    pub fn writes(self) -> bool {
        self != TableAccess::Select
    }

    /// The `dml` mask digits this access needs (indexes into `[INSERT, UPDATE, SELECT, DELETE]`).
    fn mask_bits(self) -> &'static [usize] {
        match self {
            TableAccess::Insert => &[0],
            TableAccess::Update => &[1],
            TableAccess::Select => &[2],
            TableAccess::Delete => &[3],
            TableAccess::Ddl => &[0, 1, 3],
        }
    }

    fn name(self) -> &'static str {
        match self {
            TableAccess::Insert => "INSERT",
            TableAccess::Update => "UPDATE",
            TableAccess::Select => "SELECT",
            TableAccess::Delete => "DELETE",
            TableAccess::Ddl => "DDL",
        }
    }
}

/// What one server.xml user may reach through the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub user: String,
    /// The logical schemas the user may use (all configured ones when server.xml lists none,
    /// as Mycat does).
    pub schemas: BTreeSet<String>,
    /// `readOnly`: every write is refused with 1495.
    pub read_only: bool,
    /// `<privileges check="true">` masks by logical schema; `None` when not checked.
    pub privileges: Option<BTreeMap<String, SchemaPrivileges>>,
}

/// The tables of one schema a user's `<privileges>` deny every access to ([`Access::denied`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Denied {
    /// Lower-cased names of the tables whose entry is `0000`.
    pub tables: Vec<String>,
    /// The schema's own mask is `0000`.
    pub whole_schema: bool,
}

impl Access {
    /// The access of `user` under `config`.
    pub fn of(config: &Config, user: &UserConfig) -> Access {
        Access {
            user: user.name.clone(),
            schemas: config.user_schemas(user).into_iter().collect(),
            read_only: user.read_only,
            privileges: user.privileges.clone(),
        }
    }

    /// Whether the user may use logical schema `schema` (exact name, as Mycat compares).
    pub fn may_use(&self, schema: &str) -> bool {
        self.schemas.contains(schema)
    }

    /// Errors: 1044 `Access denied for user ... to database ...` (SQLSTATE 42000), as MySQL
    /// answers for a database the account has no grant on.
    pub fn check_schema(&self, schema: &str) -> Result<(), RouteError> {
        if self.may_use(schema) {
            return Ok(());
        }
        Err(RouteError::new(
            Refusal::DatabaseAccessDenied,
            format!(
                "Access denied for user '{}' to database '{schema}'",
                self.user
            ),
        ))
    }

    /// Checks one table access: the schema may be used, a `readOnly` user does not write, and
    /// the `<privileges>` mask of the table (or else of its schema) allows it.
    ///
    /// Errors: 1044 (schema), 1495 `User readonly` (Mycat's), 3012 (Mycat's privilege message,
    /// naming the table and the access).
    pub fn check_table(
        &self,
        schema: &str,
        table: &str,
        access: TableAccess,
    ) -> Result<(), RouteError> {
        self.check_schema(schema)?;
        if access.writes() {
            self.check_write()?;
        }
        let Some(mask) = self.mask(schema, table) else {
            return Ok(());
        };
        if access.mask_bits().iter().all(|&b| mask[b]) {
            return Ok(());
        }
        Err(RouteError::new(
            Refusal::DmlPrivilege,
            format!(
                "The statement DML privilege check is not passed, reject for user '{}' ({} on {schema}.{table})",
                self.user,
                access.name()
            ),
        ))
    }

    /// Errors: 1495 `User readonly` for a `readOnly` user.
    pub fn check_write(&self) -> Result<(), RouteError> {
        if self.read_only {
            return Err(RouteError::new(
                Refusal::ReadOnly,
                "User readonly".to_string(),
            ));
        }
        Ok(())
    }

    /// Whether the `<privileges>` mask of `schema`.`table` allows nothing at all (`0000`): the
    /// table is left out of `information_schema` and `SHOW TABLES`, as MariaDB shows an account
    /// no table it holds no privilege on.
    pub fn denies_all(&self, schema: &str, table: &str) -> bool {
        self.mask(schema, table) == Some([false; 4])
    }

    /// What the `<privileges>` of `schema` deny every access to: the tables named with a `0000`
    /// mask (lower-cased), and whether the schema's own mask is `0000` (then so is every table
    /// without an entry of its own).
    pub fn denied(&self, schema: &str) -> Denied {
        let Some(s) = self.privileges.as_ref().and_then(|p| p.get(schema)) else {
            return Denied::default();
        };
        Denied {
            tables: s
                .tables
                .iter()
                .filter(|(_, m)| **m == [false; 4])
                .map(|(n, _)| n.to_ascii_lowercase())
                .collect(),
            whole_schema: s.dml == [false; 4],
        }
    }

    /// The mask that governs `schema`.`table`: the table's entry, else the schema's; `None` when
    /// privileges are not checked or the schema has no entry (Mycat lets those through).
    fn mask(&self, schema: &str, table: &str) -> Option<[bool; 4]> {
        let s = self.privileges.as_ref()?.get(schema)?;
        Some(
            s.tables
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(table))
                .map_or(s.dml, |(_, m)| *m),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> Access {
        let mut tables = BTreeMap::new();
        tables.insert("secret".to_string(), [false, false, false, false]);
        tables.insert("log".to_string(), [true, false, true, false]);
        let mut privileges = BTreeMap::new();
        privileges.insert(
            "A".to_string(),
            SchemaPrivileges {
                dml: [true, true, true, true],
                tables,
            },
        );
        Access {
            user: "app".to_string(),
            schemas: ["A".to_string(), "B".to_string()].into_iter().collect(),
            read_only: false,
            privileges: Some(privileges),
        }
    }

    #[test]
    fn every_access_is_checked_against_its_table_mask() {
        let a = access();
        assert!(a.check_table("A", "orders", TableAccess::Delete).is_ok());
        assert!(a.check_table("A", "orders", TableAccess::Ddl).is_ok());
        for kind in [
            TableAccess::Select,
            TableAccess::Insert,
            TableAccess::Update,
            TableAccess::Delete,
            TableAccess::Ddl,
        ] {
            assert_eq!(
                a.check_table("A", "SECRET", kind).unwrap_err().refusal,
                Refusal::DmlPrivilege
            );
        }
        assert!(a.check_table("A", "log", TableAccess::Insert).is_ok());
        assert_eq!(
            a.check_table("A", "log", TableAccess::Ddl)
                .unwrap_err()
                .refusal,
            Refusal::DmlPrivilege
        );
        // No entry for schema B: not checked, as Mycat.
        assert!(a.check_table("B", "secret", TableAccess::Delete).is_ok());
        assert_eq!(
            a.check_table("C", "t", TableAccess::Select)
                .unwrap_err()
                .refusal,
            Refusal::DatabaseAccessDenied
        );
    }

    #[test]
    fn read_only_users_do_not_write() {
        let mut a = access();
        a.read_only = true;
        assert!(a.check_table("A", "orders", TableAccess::Select).is_ok());
        assert_eq!(
            a.check_table("A", "orders", TableAccess::Ddl)
                .unwrap_err()
                .refusal,
            Refusal::ReadOnly
        );
    }
}

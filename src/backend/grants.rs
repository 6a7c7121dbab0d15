//! What a backend account may do beyond what manx needs (issue 17, part 7).
//!
//! manx's own statements need little: DML and DDL on the dataNodes' databases, `EXECUTE` for
//! the database sequence function, and what the heartbeats read (`SHOW SLAVE STATUS`, `SHOW
//! STATUS`, `pg_is_in_recovery()`). An account holding more turns any statement that gets past
//! the gateway's checks into a server-wide one: `SHUTDOWN`, files written with `INTO OUTFILE`,
//! password hashes read from `mysql.user`, new accounts. These functions read an account's
//! privileges as the server reports them and name each one that gives more than manx needs,
//! with the reason; the start-up check and `manx check --strict` report them.
//!
//! MySQL/MariaDB: [`mysql_excess`] reads the lines of `SHOW GRANTS` (for the current user; on
//! MariaDB that includes the grants of the role enabled at login, its default role). It judges
//! by allow-list where it can:
//! * a privilege on `*.*` is reported unless it only reads server status ([`GLOBAL_HARMLESS`]):
//!   global data privileges reach every database, the `mysql` system schema with its password
//!   hashes and privilege tables among them;
//! * on any object, `GRANT OPTION` (as a privilege or `WITH GRANT OPTION`) is reported;
//! * a privilege on the `mysql` schema, or on a database pattern that matches it (`` `%`.* ``,
//!   `` `my%`.* ``), is reported.
//!
//! Role grants (`GRANT role TO user`) are not judged: a role's privileges count once it is
//! enabled, and the default role's lines are part of what `SHOW GRANTS` returns. `PROXY` is not
//! judged (manx never uses proxy authentication) except for its `WITH GRANT OPTION`.
//!
//! PostgreSQL: [`postgres_excess`] judges the role's attributes and its membership in the
//! predefined roles that reach beyond its databases ([`PG_DANGEROUS_ROLES`]).

use std::fmt;

/// One privilege of a backend account that gives more than manx needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcessPrivilege {
    /// The privilege as the server names it, upper-cased for MySQL (`SUPER`, `ALL PRIVILEGES`,
    /// `GRANT OPTION`); for PostgreSQL the role attribute (`SUPERUSER`, `CREATEROLE`) or the
    /// predefined role it is a member of (`pg_read_server_files`).
    pub privilege: String,
    /// Where it applies: MySQL's object (`*.*`, `` `db1`.* ``, `` `db1`.`t` ``); for PostgreSQL
    /// `role attribute` or `role membership`.
    pub on: String,
    /// Why a gateway's account should not hold it.
    pub why: &'static str,
}

impl fmt::Display for ExcessPrivilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}: {}", self.privilege, self.on, self.why)
    }
}

/// Global privileges that only read server status, and manx's heartbeats need some of them:
/// `SHOW SLAVE STATUS` needs `SLAVE MONITOR` (alias `REPLICA MONITOR`) on MariaDB 10.5.9 and
/// later, `REPLICATION CLIENT` on MySQL and older MariaDB (MariaDB 10.5 made it an alias of
/// `BINLOG MONITOR`). `PROCESS` and `SHOW DATABASES` are common monitoring grants.
pub const GLOBAL_HARMLESS: &[&str] = &[
    "USAGE",
    "REPLICATION CLIENT",
    "BINLOG MONITOR",
    "SLAVE MONITOR",
    "REPLICA MONITOR",
    "PROCESS",
    "SHOW DATABASES",
];

/// Reasons for the global privileges that are worse than "reaches every database".
const GLOBAL_REASONS: &[(&str, &str)] = &[
    (
        "ALL PRIVILEGES",
        "every privilege on every database and on the server (SUPER, FILE, SHUTDOWN, CREATE USER, the mysql schema)",
    ),
    (
        "SUPER",
        "SET GLOBAL, KILL of any connection, writes despite read_only, replication control",
    ),
    (
        "FILE",
        "reads and writes files on the database host (LOAD_FILE, SELECT ... INTO OUTFILE, LOAD DATA INFILE)",
    ),
    ("SHUTDOWN", "stops the database server"),
    (
        "CREATE USER",
        "creates, drops and renames accounts, and changes their passwords",
    ),
    (
        "RELOAD",
        "FLUSH and RESET statements on the whole server (privileges, logs, binary logs)",
    ),
    (
        "REPLICATION SLAVE",
        "streams the binary log: every change to every database",
    ),
    (
        "REPLICATION REPLICA",
        "streams the binary log: every change to every database",
    ),
    (
        "GRANT OPTION",
        "passes the account's privileges on to other accounts",
    ),
];

const GRANT_OPTION_WHY: &str = "passes the account's privileges on to other accounts";
const ADMIN_WHY: &str = "an administrative privilege (part of SUPER in older versions)";
const GLOBAL_WHY: &str = "a privilege on every database, the mysql system schema (password hashes, privilege tables) among them";
const MYSQL_SCHEMA_WHY: &str =
    "reaches the mysql system schema (password hashes, privilege tables)";
const UNREADABLE_WHY: &str =
    "a SHOW GRANTS line manx cannot read, so it cannot tell what the account may do";

/// The privileges in `lines` (the rows of MySQL's or MariaDB's `SHOW GRANTS`, one statement
/// each) that give more than manx needs (module documentation), in line order.
///
/// Lines that are not `GRANT` statements (`SET DEFAULT ROLE ...`, MySQL's partial `REVOKE`s)
/// add nothing; a `GRANT` line this function cannot read is reported itself (privilege
/// `(unreadable)`, `on` the line up to its `TO`, so no password hash is repeated).
pub fn mysql_excess<S: AsRef<str>>(lines: &[S]) -> Vec<ExcessPrivilege> {
    let mut out = Vec::new();
    for line in lines {
        let line = line.as_ref();
        let tokens = tokenize(line);
        if !matches!(tokens.first(), Some(Tok::Word(w)) if w == "GRANT") {
            continue;
        }
        match parse_grant(&tokens) {
            Some(Grant::Role) => {}
            Some(Grant::Privileges {
                privileges,
                target,
                with_grant_option,
            }) => judge(&privileges, &target, with_grant_option, &mut out),
            None => out.push(ExcessPrivilege {
                privilege: "(unreadable)".to_string(),
                on: before_to(line),
                why: UNREADABLE_WHY,
            }),
        }
    }
    out
}

/// The findings of one `GRANT <privileges> ON <target>` line.
fn judge(
    privileges: &[String],
    target: &Target,
    with_grant_option: bool,
    out: &mut Vec<ExcessPrivilege>,
) {
    let on = target.to_string();
    let push = |out: &mut Vec<ExcessPrivilege>, p: &str, why: &'static str| {
        out.push(ExcessPrivilege {
            privilege: p.to_string(),
            on: on.clone(),
            why,
        })
    };
    let is_proxy = privileges.iter().any(|p| p == "PROXY");
    if target.is_global() {
        for p in privileges {
            if GLOBAL_HARMLESS.contains(&p.as_str()) {
                continue;
            }
            let why = GLOBAL_REASONS
                .iter()
                .find(|(name, _)| name == p)
                .map(|(_, why)| *why)
                .unwrap_or(
                    if p.ends_with(" ADMIN")
                        || p.ends_with("_ADMIN")
                        || p == "SET USER"
                        || p == "SYSTEM_USER"
                    {
                        ADMIN_WHY
                    } else {
                        GLOBAL_WHY
                    },
                );
            push(out, p, why);
        }
    } else if !is_proxy {
        for p in privileges {
            if p == "GRANT OPTION" {
                push(out, p, GRANT_OPTION_WHY);
            } else if target.reaches_mysql_schema() {
                push(out, p, MYSQL_SCHEMA_WHY);
            }
        }
    }
    let listed = privileges.iter().any(|p| p == "GRANT OPTION");
    if with_grant_option && !listed {
        push(out, "GRANT OPTION", GRANT_OPTION_WHY);
    }
}

/// A token of a `SHOW GRANTS` line.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A bare word, upper-cased (keywords, privilege names, unquoted names, numbers).
    Word(String),
    /// A backquoted identifier, unquoted (doubled backquotes undone).
    Ident(String),
    /// A string literal in single or double quotes (user, host, password hash), unquoted.
    Str(String),
    Punct(char),
}

/// Splits a line into tokens by MySQL's lexical rules (quotes doubled inside their own quotes;
/// backslash escapes inside string literals, not inside backquotes).
fn tokenize(line: &str) -> Vec<Tok> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '`' || c == '\'' || c == '"' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '\\' && c != '`' && i + 1 < chars.len() {
                    text.push(chars[i + 1]);
                    i += 2;
                } else if chars[i] == c && chars.get(i + 1) == Some(&c) {
                    text.push(c);
                    i += 2;
                } else if chars[i] == c {
                    i += 1;
                    break;
                } else {
                    text.push(chars[i]);
                    i += 1;
                }
            }
            out.push(if c == '`' {
                Tok::Ident(text)
            } else {
                Tok::Str(text)
            });
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Tok::Word(
                chars[start..i].iter().collect::<String>().to_uppercase(),
            ));
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// What a `GRANT` line grants.
#[derive(Debug, PartialEq)]
enum Grant {
    /// `GRANT role[, role] TO grantee [WITH ADMIN OPTION]`.
    Role,
    /// `GRANT privilege[ (columns)][, ...] ON [object type] target TO grantee ... [WITH GRANT OPTION]`.
    Privileges {
        /// Names upper-cased, words joined by one space, `ALL` spelled `ALL PRIVILEGES`.
        privileges: Vec<String>,
        target: Target,
        with_grant_option: bool,
    },
}

/// The object of a privilege grant.
#[derive(Debug, PartialEq)]
enum Target {
    /// `*.*`.
    Global,
    /// `db.*` (a database name or a `LIKE` pattern of names).
    Database(String),
    /// `db.object` (a table, or a routine with `FUNCTION`/`PROCEDURE`/`PACKAGE`).
    Object(String, String),
    /// `PROXY ON user@host`, or a form this reader does not take apart.
    Other(String),
}

impl Target {
    fn is_global(&self) -> bool {
        matches!(self, Target::Global)
    }

    /// The `mysql` schema, or a database pattern that matches its name (`%` and `_` are
    /// wildcards in a database-level grant; `\` escapes them). An object grant names one
    /// database exactly.
    fn reaches_mysql_schema(&self) -> bool {
        match self {
            Target::Database(db) => like_matches(db, "mysql"),
            Target::Object(db, _) => db.eq_ignore_ascii_case("mysql"),
            Target::Global | Target::Other(_) => false,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quote = |s: &str| format!("`{}`", s.replace('`', "``"));
        match self {
            Target::Global => write!(f, "*.*"),
            Target::Database(db) => write!(f, "{}.*", quote(db)),
            Target::Object(db, o) => write!(f, "{}.{}", quote(db), quote(o)),
            Target::Other(s) => write!(f, "{s}"),
        }
    }
}

/// Whether `name` matches the `LIKE` pattern `pattern` of a database-level grant (`%` any run,
/// `_` one character, `\` escapes the next one), ignoring ASCII case as database names on the
/// usual `lower_case_table_names` settings compare.
fn like_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('%', rest)) => (0..=n.len()).any(|k| go(rest, &n[k..])),
            Some(('_', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some(('\\', rest)) if !rest.is_empty() => {
                !n.is_empty() && rest[0].eq_ignore_ascii_case(&n[0]) && go(&rest[1..], &n[1..])
            }
            Some((c, rest)) => !n.is_empty() && c.eq_ignore_ascii_case(&n[0]) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// Parses the tokens of a `GRANT` line; `None` when it has no `TO` or its privilege list or
/// target do not read as MySQL prints them.
fn parse_grant(tokens: &[Tok]) -> Option<Grant> {
    let is_word = |t: &Tok, w: &str| matches!(t, Tok::Word(x) if x == w);
    // Top-level ON and TO (outside column lists).
    let mut depth = 0usize;
    let (mut on, mut to) = (None, None);
    for (i, t) in tokens.iter().enumerate().skip(1) {
        match t {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            _ if on.is_none() && to.is_none() && is_word(t, "ON") => on = Some(i),
            _ if is_word(t, "TO") => {
                to = Some(i);
                break;
            }
            _ => {}
        }
    }
    let to = to?;
    let Some(on) = on else {
        return Some(Grant::Role);
    };
    let privileges = privilege_list(&tokens[1..on])?;
    let mut target = &tokens[on + 1..to];
    // The object type MariaDB and MySQL print before routines (and MySQL's optional TABLE).
    while let Some(Tok::Word(w)) = target.first() {
        if matches!(
            w.as_str(),
            "TABLE" | "FUNCTION" | "PROCEDURE" | "PACKAGE" | "BODY"
        ) {
            target = &target[1..];
        } else {
            break;
        }
    }
    let target = if privileges.iter().any(|p| p == "PROXY") {
        Target::Other(render(target))
    } else {
        parse_target(target)?
    };
    // After TO: WITH ... GRANT OPTION (possibly among resource limits), never inside a string.
    let rest = &tokens[to + 1..];
    let with_grant_option = rest
        .iter()
        .position(|t| is_word(t, "WITH"))
        .is_some_and(|w| {
            rest[w..]
                .windows(2)
                .any(|p| is_word(&p[0], "GRANT") && is_word(&p[1], "OPTION"))
        });
    Some(Grant::Privileges {
        privileges,
        target,
        with_grant_option,
    })
}

/// `SELECT, INSERT (a, b), CREATE TEMPORARY TABLES` → the privilege names (column lists
/// dropped). `None` for an empty list or an item that is not words.
fn privilege_list(tokens: &[Tok]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    let mut depth = 0usize;
    let finish = |words: &mut Vec<&str>, out: &mut Vec<String>| -> Option<()> {
        if words.is_empty() {
            return None;
        }
        let name = words.join(" ");
        out.push(if name == "ALL" {
            "ALL PRIVILEGES".to_string()
        } else {
            name
        });
        words.clear();
        Some(())
    };
    for t in tokens {
        match t {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => depth = depth.checked_sub(1)?,
            _ if depth > 0 => {}
            Tok::Punct(',') => finish(&mut words, &mut out)?,
            Tok::Word(w) => words.push(w),
            _ => return None,
        }
    }
    finish(&mut words, &mut out)?;
    Some(out)
}

/// `*.*`, `*`, `db.*`, `db.t`, `t` (names bare or backquoted).
fn parse_target(tokens: &[Tok]) -> Option<Target> {
    let name = |t: &Tok| match t {
        Tok::Ident(s) => Some(Some(s.clone())),
        Tok::Word(w) => Some(Some(w.clone())),
        Tok::Punct('*') => Some(None),
        _ => None,
    };
    match tokens {
        [db, Tok::Punct('.'), object] => match (name(db)?, name(object)?) {
            (None, None) => Some(Target::Global),
            (Some(db), None) => Some(Target::Database(db)),
            (Some(db), Some(o)) => Some(Target::Object(db, o)),
            (None, Some(_)) => None,
        },
        // A grant on `*` or a bare table applies to the default database of the GRANT; SHOW
        // GRANTS prints it qualified, so this only comes from other sources.
        [one] => Some(Target::Other(name(one)?.unwrap_or_else(|| "*".to_string()))),
        _ => None,
    }
}

/// Tokens printed back (for messages): identifiers backquoted, strings single-quoted, words
/// separated by spaces, `.` `@` `,` `(` `)` as MySQL prints them.
fn render(tokens: &[Tok]) -> String {
    let mut out = String::new();
    let mut glue = true;
    for t in tokens {
        let (text, attach_left, attach_right) = match t {
            Tok::Word(w) => (w.clone(), false, false),
            Tok::Ident(s) => (format!("`{}`", s.replace('`', "``")), false, false),
            Tok::Str(s) => (format!("'{}'", s.replace('\'', "''")), false, false),
            Tok::Punct(c) => (
                c.to_string(),
                matches!(c, '.' | '@' | ',' | ')'),
                matches!(c, '.' | '@' | '('),
            ),
        };
        if !glue && !attach_left {
            out.push(' ');
        }
        out.push_str(&text);
        glue = attach_right;
    }
    out
}

/// The line up to its first top-level `TO` (what it grants and on what, never the
/// `IDENTIFIED BY PASSWORD` hash that follows), at most 120 characters.
fn before_to(line: &str) -> String {
    let tokens = tokenize(line);
    let end = tokens
        .iter()
        .position(|t| matches!(t, Tok::Word(w) if w == "TO"))
        .unwrap_or(tokens.len());
    let text = render(&tokens[..end]);
    text.chars().take(120).collect()
}

/// A PostgreSQL role as `pg_roles` describes it, with the predefined roles it is a member of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgRole {
    /// `rolsuper`.
    pub superuser: bool,
    /// `rolcreaterole`.
    pub create_role: bool,
    /// `rolcreatedb`.
    pub create_db: bool,
    /// `rolreplication`.
    pub replication: bool,
    /// `rolbypassrls`.
    pub bypass_rls: bool,
    /// Names of the roles of [`PG_DANGEROUS_ROLES`] it is a member of, directly or through
    /// other roles (`pg_has_role(..., 'MEMBER')`: counted whether or not it inherits them,
    /// since `SET ROLE` reaches them either way).
    pub member_of: Vec<String>,
}

/// PostgreSQL's predefined roles that reach beyond the role's own databases, with the reason
/// (PostgreSQL documentation, "Predefined Roles"). `pg_monitor`, `pg_read_all_settings` and
/// `pg_read_all_stats` only read status and are not listed.
pub const PG_DANGEROUS_ROLES: &[(&str, &str)] = &[
    (
        "pg_read_server_files",
        "reads any file the server can read (COPY FROM a file, pg_read_file)",
    ),
    (
        "pg_write_server_files",
        "writes files where the server can (COPY TO a file)",
    ),
    (
        "pg_execute_server_program",
        "runs programs on the database host as the server's OS user (COPY ... PROGRAM)",
    ),
    (
        "pg_read_all_data",
        "reads every table of every database, whatever its grants",
    ),
    (
        "pg_write_all_data",
        "writes every table of every database, whatever its grants",
    ),
    ("pg_signal_backend", "cancels and terminates other sessions"),
];

/// The attributes and memberships of `role` that give more than manx needs: `SUPERUSER`
/// (everything, including running programs through `COPY ... PROGRAM`), `CREATEROLE` (creates
/// roles and, before PostgreSQL 16, grants itself membership in any non-superuser role,
/// the predefined ones above included), `CREATEDB`, `REPLICATION` (streams the WAL of every
/// database), `BYPASSRLS`, and the [`PG_DANGEROUS_ROLES`] it is a member of. A superuser's
/// memberships are not listed: it holds everything anyway.
pub fn postgres_excess(role: &PgRole) -> Vec<ExcessPrivilege> {
    let attributes: [(bool, &str, &'static str); 5] = [
        (
            role.superuser,
            "SUPERUSER",
            "bypasses every permission check: every database, files and programs on the host (COPY ... PROGRAM), other roles",
        ),
        (
            role.create_role,
            "CREATEROLE",
            "creates and alters roles (before PostgreSQL 16 it can grant itself any non-superuser role, the predefined ones included)",
        ),
        (
            role.create_db,
            "CREATEDB",
            "creates databases (and drops those it owns); manx never needs to",
        ),
        (
            role.replication,
            "REPLICATION",
            "streams the write-ahead log: every change to every database of the cluster",
        ),
        (
            role.bypass_rls,
            "BYPASSRLS",
            "ignores every row-level security policy",
        ),
    ];
    let mut out: Vec<ExcessPrivilege> = attributes
        .into_iter()
        .filter(|(held, _, _)| *held)
        .map(|(_, privilege, why)| ExcessPrivilege {
            privilege: privilege.to_string(),
            on: "role attribute".to_string(),
            why,
        })
        .collect();
    if !role.superuser {
        for (name, why) in PG_DANGEROUS_ROLES {
            if role.member_of.iter().any(|m| m == name) {
                out.push(ExcessPrivilege {
                    privilege: name.to_string(),
                    on: "role membership".to_string(),
                    why,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;

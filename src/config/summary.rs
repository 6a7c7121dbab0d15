//! The human-readable summary `manx check` prints.

use std::fmt::Write;

use super::{Config, TableKind};

impl Config {
    /// Schemas with their tables (rule, column, function class, dataNodes), dataNodes, and
    /// dataHosts with their hosts and settings, one item per line.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for s in self.schemas.values() {
            let _ = writeln!(
                out,
                "schema {}{}",
                s.name,
                s.data_node
                    .as_ref()
                    .map(|d| format!(" (default dataNode {d})"))
                    .unwrap_or_default()
            );
            for t in s.tables.values() {
                let how = match &t.kind {
                    TableKind::Global => "global".to_string(),
                    TableKind::Unsharded => "no rule (every node)".to_string(),
                    TableKind::Child {
                        parent,
                        join_key,
                        parent_key,
                    } => format!("child of {parent}: {join_key} = {parent}.{parent_key}"),
                    TableKind::Sharded { rule } => match self.table_rules.get(rule) {
                        Some(r) => {
                            let class = self
                                .functions
                                .get(&r.function)
                                .map(|f| f.class.as_str())
                                .unwrap_or("?");
                            format!(
                                "rule {rule}: column {} function {} ({class})",
                                r.column, r.function
                            )
                        }
                        None => format!("rule {rule}"),
                    },
                };
                let _ = writeln!(
                    out,
                    "  table {} {how} dataNodes {}",
                    t.name,
                    t.data_nodes.join(",")
                );
            }
        }
        for n in self.data_nodes.values() {
            let _ = writeln!(
                out,
                "dataNode {} = dataHost {} database {}",
                n.name, n.data_host, n.database
            );
        }
        for h in self.data_hosts.values() {
            let _ = writeln!(
                out,
                "dataHost {} balance={} writeType={} switchType={} maxCon={} minCon={} heartbeat {:?}",
                h.name, h.balance, h.write_type, h.switch_type, h.max_con, h.min_con, h.heartbeat
            );
            for w in &h.write_hosts {
                let _ = writeln!(
                    out,
                    "  writeHost {} {}:{} user {}",
                    w.host.name, w.host.address, w.host.port, w.host.user
                );
                for r in &w.read_hosts {
                    let _ = writeln!(
                        out,
                        "    readHost {} {}:{} user {} weight {}",
                        r.name, r.address, r.port, r.user, r.weight
                    );
                }
            }
        }
        for u in self.users.values() {
            let _ = writeln!(
                out,
                "user {} schemas {}{}",
                u.name,
                u.schemas.join(","),
                if u.read_only { " (read-only)" } else { "" }
            );
        }
        out
    }
}

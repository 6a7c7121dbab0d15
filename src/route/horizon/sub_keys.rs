//! Sub-keys: the `GROUP BY` / `ORDER BY` keys of a merge, resolved to select-list positions (and
//! the hidden columns added for keys the client did not select).

use super::*;

/// One expression the nodes group by for DISTINCT aggregates / GROUP_CONCAT: its normalised
/// tokens (for comparing expressions as written), its text range, and descending order.
#[derive(Clone)]
pub(super) struct SubKey {
    pub(super) tokens: Vec<String>,
    pub(super) range: Range<usize>,
    pub(super) desc: bool,
}

/// The sub-keys ([`Grouping::sub_keys`]) the aggregates of one SELECT need, collected as they
/// are planned.
///
/// - `COUNT/SUM/AVG(DISTINCT args)` and `GROUP_CONCAT(DISTINCT args ...)`: the sub-keys are
///   exactly `args` (as a set), so that rows with equal argument values are adjacent and the
///   merge can skip repeats by comparing each row with the previous one. Two such aggregates
///   over different expressions cannot both be served by one node order: refused.
/// - `GROUP_CONCAT(... ORDER BY k ...)`: the sub-keys start with `k` in its directions, so the
///   pieces arrive in the concatenation's order. With DISTINCT, `k` must be among the
///   arguments (else the order would separate equal values).
/// - `GROUP_CONCAT(e)` without either needs none: each node's value per group is a piece.
#[derive(Default)]
pub(super) struct SubKeys {
    pub(super) set: Option<Vec<SubKey>>,
    pub(super) prefix: Option<Vec<SubKey>>,
}

/// Whether `text` is an integer literal, as MySQL reads `GROUP BY <n>` (a position): digits,
/// possibly signed and in parentheses.
pub(super) fn integer_literal(text: &str) -> bool {
    let mut t = text.trim();
    while let Some(inner) = t.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        t = inner.trim();
    }
    let digits = t.trim_start_matches(['-', '+']).trim_start();
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

pub(super) fn unsupported_sub_keys(what: &str) -> RouteError {
    RouteError::syntax(format!(
        "{what} in one SELECT over several dataNodes is not supported: use one DISTINCT expression list (and a GROUP_CONCAT ORDER BY over it), group by the sharding column, or route to one dataNode"
    ))
}

impl SubKeys {
    pub(super) fn same_set(a: &[SubKey], b: &[SubKey]) -> bool {
        let norm = |v: &[SubKey]| {
            let mut t: Vec<Vec<String>> = v.iter().map(|k| k.tokens.clone()).collect();
            t.sort();
            t.dedup();
            t
        };
        norm(a) == norm(b)
    }

    /// Records what `call` needs. Errors: a need that conflicts with an earlier one (named).
    pub(super) fn add(&mut self, layout: &Layout, call: &AggregateCall) -> Result<(), RouteError> {
        if !call.needs_sub_keys() {
            return Ok(());
        }
        let key = |r: &Range<usize>, desc: bool| SubKey {
            tokens: layout.normalized(r),
            range: r.clone(),
            desc,
        };
        if call.distinct {
            let mut args: Vec<SubKey> = Vec::new();
            for r in &call.arg_list {
                let k = key(r, false);
                if !args.iter().any(|a| a.tokens == k.tokens) {
                    args.push(k);
                }
            }
            match &self.set {
                Some(set) if !Self::same_set(set, &args) => {
                    return Err(unsupported_sub_keys(
                        "DISTINCT aggregates over different expressions",
                    ));
                }
                Some(_) => {}
                None => self.set = Some(args),
            }
        }
        if !call.order.is_empty() {
            let order: Vec<SubKey> = call.order.iter().map(|(r, d)| key(r, *d)).collect();
            match &self.prefix {
                Some(p)
                    if p.len() != order.len()
                        || p.iter()
                            .zip(&order)
                            .any(|(a, b)| a.tokens != b.tokens || a.desc != b.desc) =>
                {
                    return Err(unsupported_sub_keys(
                        "GROUP_CONCATs with different ORDER BY",
                    ));
                }
                Some(_) => {}
                None => self.prefix = Some(order),
            }
        }
        if let (Some(set), Some(prefix)) = (&self.set, &self.prefix)
            && prefix
                .iter()
                .any(|k| !set.iter().any(|s| s.tokens == k.tokens))
        {
            return Err(unsupported_sub_keys(
                "a GROUP_CONCAT ORDER BY over expressions beside the DISTINCT ones",
            ));
        }
        Ok(())
    }

    /// The sub-keys in node order: the ORDER BY prefix, then the other DISTINCT expressions.
    pub(super) fn list(&self) -> Vec<SubKey> {
        let mut out: Vec<SubKey> = self.prefix.clone().unwrap_or_default();
        for k in self.set.iter().flatten() {
            if !out.iter().any(|o| o.tokens == k.tokens) {
                out.push(k.clone());
            }
        }
        out
    }
}

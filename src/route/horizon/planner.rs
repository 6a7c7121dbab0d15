//! The planner's state while it walks a SELECT's select list, `GROUP BY`, `HAVING` and `ORDER BY`:
//! the items the nodes must return and where each output column comes from.

use super::*;
use crate::route::Refusal;

/// One item of the select list as the merge sees it.
pub(super) struct Item {
    /// The expression's text range (without its alias), `None` for `*` / `t.*`.
    pub(super) expr: Option<Range<usize>>,
    pub(super) alias: Option<String>,
    pub(super) aggregate: Option<AggregateCall>,
    /// An aggregate somewhere inside the expression, not at its top.
    pub(super) nested_aggregate: bool,
}

/// The planner's working state: the layout, the statement and the extra columns so far.
pub(super) struct Planner<'a> {
    pub(super) sql: &'a str,
    pub(super) layout: Layout,
    pub(super) items: Vec<Item>,
    /// Extra columns (their SQL, without alias).
    pub(super) hidden: Vec<String>,
    /// Byte ranges the per-node edits already change (schema qualifiers): text copied from
    /// them would lose the edit.
    pub(super) edited: Vec<Range<usize>>,
    /// What the DISTINCT aggregates and GROUP_CONCATs planned so far need the nodes to group by.
    pub(super) sub: SubKeys,
    /// Groups span nodes and are merged: a GROUP_CONCAT's per-node value is then a piece, not
    /// something to sort by.
    pub(super) merging: bool,
    /// The group keys that are columns, by column name (as written): what a bare name in
    /// `HAVING` reads before a select alias of the same name (MariaDB's
    /// `find_field_in_group_list`).
    pub(super) group_columns: Vec<(String, ColumnRef)>,
}

impl<'a> Planner<'a> {
    pub(super) fn text(&self, r: &Range<usize>) -> Result<&'a str, RouteError> {
        if self
            .edited
            .iter()
            .any(|e| e.start < r.end && r.start < e.end)
        {
            return Err(RouteError::syntax(
                "a schema-qualified column in ORDER BY / GROUP BY / an aggregate over several dataNodes is not supported: drop the schema qualifier",
            ));
        }
        self.sql
            .get(r.clone())
            .ok_or_else(|| RouteError::syntax("an empty ORDER BY / GROUP BY item"))
    }

    pub(super) fn add_hidden(&mut self, sql: String) -> ColumnRef {
        if let Some(i) = self.hidden.iter().position(|h| *h == sql) {
            return ColumnRef::Hidden(i);
        }
        self.hidden.push(sql);
        ColumnRef::Hidden(self.hidden.len() - 1)
    }

    /// Whether item `i`'s position is known before the result arrives (no `*` before it).
    pub(super) fn fixed(&self, i: usize) -> bool {
        self.items[..=i].iter().all(|it| it.expr.is_some())
    }

    /// The select-list item a key written as `key` (text `range`) denotes: a position
    /// (`ORDER BY 2`), an alias, or the same expression as written in the list.
    pub(super) fn resolve(
        &self,
        key: &Expr,
        range: &Range<usize>,
        alias_first: bool,
    ) -> Option<usize> {
        if let Expr::Value(v) = key
            && let Value::Number(n, _) = &v.value
        {
            return n.parse::<usize>().ok().filter(|&n| n >= 1).map(|n| n - 1);
        }
        let by_alias = || match key {
            Expr::Identifier(id) => self.items.iter().position(|it| {
                it.alias
                    .as_deref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(&id.value))
            }),
            _ => None,
        };
        let by_text = || self.by_text(range);
        if alias_first {
            by_alias().or_else(by_text)
        } else {
            by_text().or_else(by_alias)
        }
    }

    /// The select-list item written as the text at `range` (without its alias).
    fn by_text(&self, range: &Range<usize>) -> Option<usize> {
        let written = self.layout.normalized(range);
        self.items.iter().position(|it| {
            it.expr
                .as_ref()
                .is_some_and(|r| self.layout.normalized(r) == written)
        })
    }

    /// A `GROUP BY` key and the text the nodes sort by for it. `column`: the item is a name
    /// that is also a select alias but reads as a FROM table's column ([`super::FromColumns`]):
    /// an extra column holds it, and the nodes sort by that column's alias (the name itself
    /// would be the select alias in their ORDER BY).
    pub(super) fn group_key(
        &mut self,
        g: &Expr,
        range: &Range<usize>,
        column: bool,
    ) -> Result<(SortKey, String), RouteError> {
        let name = match g {
            Expr::Identifier(id) => Some(id.value.clone()),
            Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
            _ => None,
        };
        if column {
            let at = self.add_hidden(self.text(range)?.to_string());
            let weight = self.weight(range, None)?;
            let ColumnRef::Hidden(i) = at else {
                unreachable!("add_hidden gives a hidden column")
            };
            if let Some(name) = name {
                self.group_columns.push((name, at));
            }
            let key = SortKey {
                column: at,
                weight,
                desc: false,
            };
            return Ok((key, format!("`__manx_{i}`")));
        }
        // A bare name is a column unless it stands for a select alias (a qualified one always
        // is): the select item written so, or no item at all.
        let is_column = match g {
            Expr::Identifier(_) => {
                self.by_text(range).is_some() || self.resolve(g, range, false).is_none()
            }
            _ => name.is_some(),
        };
        let key = self.key(g, range, false, false)?;
        if is_column && let Some(name) = name {
            self.group_columns.push((name, key.column));
        }
        Ok((key, self.text(range)?.to_string()))
    }

    /// The group key column a bare `name` in `HAVING` reads before any select alias: a group
    /// key that is a column of that name. Errors: two such keys (which MariaDB cannot tell
    /// apart either).
    pub(super) fn group_column(&self, name: &str) -> Result<Option<ColumnRef>, RouteError> {
        let mut found = self
            .group_columns
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, c)| *c);
        let first = found.next();
        if found.any(|c| Some(c) != first) {
            return Err(RouteError::not_supported(format!(
                "Column '{name}' in HAVING over several dataNodes is ambiguous: two GROUP BY columns have that name; qualify it"
            )));
        }
        Ok(first)
    }

    /// A sort or group key: the column holding it and its collation weight.
    pub(super) fn key(
        &mut self,
        key: &Expr,
        range: &Range<usize>,
        desc: bool,
        alias_first: bool,
    ) -> Result<SortKey, RouteError> {
        let resolved = self.resolve(key, range, alias_first);
        if let Some(i) = resolved {
            if i >= self.items.len() && !self.items.iter().any(|it| it.expr.is_none()) {
                return Err(RouteError::new(
                    Refusal::UnknownColumn,
                    format!(
                        "Unknown column '{}' in 'order clause'",
                        &self.sql[range.clone()]
                    ),
                ));
            }
            // A position into `*` (or past it): the column is found at run time, its text is
            // not known here, so no weight (a string key there is refused by the merge).
            if i >= self.items.len() || !self.fixed(i) && self.items[i].expr.is_none() {
                return Ok(SortKey {
                    column: ColumnRef::Visible(i),
                    weight: None,
                    desc,
                });
            }
            let expr = self.items[i].expr.clone().expect("not a wildcard");
            let column = if self.fixed(i) {
                ColumnRef::Visible(i)
            } else {
                self.add_hidden(self.text(&expr)?.to_string())
            };
            let aggregate = self.items[i].aggregate.clone();
            let weight = self.weight(&expr, aggregate.as_ref())?;
            return Ok(SortKey {
                column,
                weight,
                desc,
            });
        }
        if contains_aggregate(key) {
            let call = aggregate_call(key, self)?;
            return match call {
                Some(call) => {
                    let column = self.add_hidden(self.text(range)?.to_string());
                    let weight = self.weight(range, Some(&call))?;
                    Ok(SortKey {
                        column,
                        weight,
                        desc,
                    })
                }
                None => Err(unsupported_aggregate()),
            };
        }
        let column = self.add_hidden(self.text(range)?.to_string());
        let weight = self.weight(range, None)?;
        Ok(SortKey {
            column,
            weight,
            desc,
        })
    }

    /// The weight column of the expression at `range`, unless it is surely not a string.
    pub(super) fn weight(
        &mut self,
        range: &Range<usize>,
        aggregate: Option<&AggregateCall>,
    ) -> Result<Option<ColumnRef>, RouteError> {
        if aggregate.is_some_and(|a| matches!(a.name, "COUNT" | "SUM" | "AVG")) {
            return Ok(None);
        }
        if self.merging && aggregate.is_some_and(|a| a.name == "GROUP_CONCAT") {
            return Err(RouteError::syntax(
                "ordering by a GROUP_CONCAT over groups that span several dataNodes is not supported",
            ));
        }
        // A MIN / MAX key sorts by the weight its fold keeps up to date (one column for both).
        if let Some(call) = aggregate.filter(|a| matches!(a.name, "MIN" | "MAX")) {
            return self.minmax_weight(call);
        }
        let text = self.text(range)?;
        if text
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        {
            return Ok(None);
        }
        Ok(Some(
            self.add_hidden(format!("WEIGHT_STRING(RTRIM({text}))")),
        ))
    }

    /// The weight column of `MIN(x)` / `MAX(x)`: `WEIGHT_STRING(RTRIM(MIN(x)))`, written one way
    /// so that the fold and any sort key on the aggregate share it. `None` for a literal.
    pub(super) fn minmax_weight(
        &mut self,
        call: &AggregateCall,
    ) -> Result<Option<ColumnRef>, RouteError> {
        let args = self.text(&call.args)?.to_string();
        if args.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Ok(None);
        }
        Ok(Some(self.add_hidden(format!(
            "WEIGHT_STRING(RTRIM({}({args})))",
            call.name
        ))))
    }

    /// The aggregate entry for a select-list aggregate or a hidden one.
    pub(super) fn aggregate(
        &mut self,
        call: &AggregateCall,
        at: ColumnRef,
    ) -> Result<Aggregate, RouteError> {
        let args = self.text(&call.args)?.to_string();
        self.sub.add(&self.layout, call)?;
        Ok(match call.name {
            "COUNT" if call.distinct => Aggregate::Distinct(DistinctOp::Count),
            "SUM" if call.distinct => Aggregate::Distinct(DistinctOp::Sum),
            "AVG" if call.distinct => Aggregate::Distinct(DistinctOp::Avg),
            "GROUP_CONCAT" => {
                let separator = match &call.separator {
                    Some(r) => Some(self.add_hidden(self.text(r)?.to_string())),
                    None => None,
                };
                Aggregate::GroupConcat {
                    distinct: call.distinct,
                    separator,
                    max_len: self.add_hidden("@@SESSION.group_concat_max_len".to_string()),
                }
            }
            "COUNT" => Aggregate::Count,
            "SUM" => Aggregate::Sum,
            "MIN" | "MAX" => {
                let weight = self.minmax_weight(call)?;
                let _ = at;
                if call.name == "MIN" {
                    Aggregate::Min { weight }
                } else {
                    Aggregate::Max { weight }
                }
            }
            "AVG" => Aggregate::Avg {
                sum: self.add_hidden(format!("SUM({args})")),
                count: self.add_hidden(format!("COUNT({args})")),
            },
            _ => unreachable!("only mergeable aggregates are planned"),
        })
    }
}

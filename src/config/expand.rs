//! Mycat's `$` range syntax for dataNode lists (SPEC §1.4).

/// A `$` range bound of a name list that is not an integer (Java `parseInt` fails in Mycat too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad range '{item}': '{bound}' is not an integer")]
pub struct BadRange {
    /// The list item, as written (`dn$a-3`).
    pub item: String,
    /// The bound that is not an integer (`a`).
    pub bound: String,
}

/// Expands a Mycat name list: split on `,` (empty items dropped, items trimmed); an item
/// `PREFIX$MIN-MAX` becomes `PREFIX{MIN}` … `PREFIX{MAX}` without zero padding (`db$01-03` →
/// `db1,db2,db3`; `dn1$0-2` → `dn10,dn11,dn12`); `dn$5` → `dn5`; `MIN > MAX` yields nothing.
///
/// Errors: a range bound that is not an integer (Java `parseInt` fails in Mycat too).
pub fn expand_names(list: &str) -> Result<Vec<String>, BadRange> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((prefix, range)) = item.split_once('$') else {
            out.push(item.to_string());
            continue;
        };
        let pieces: Vec<&str> = range.split('-').collect();
        let parse = |s: &str| {
            super::java_int(s)
                .filter(|v| i32::try_from(*v).is_ok())
                .ok_or_else(|| BadRange {
                    item: item.to_string(),
                    bound: s.to_string(),
                })
        };
        let min = parse(pieces[0])?;
        let max = parse(pieces[pieces.len() - 1])?;
        out.extend((min..=max).map(|i| format!("{prefix}{i}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand_names;

    #[test]
    fn mycat_examples() {
        assert_eq!(expand_names("dn1,dn2").unwrap(), ["dn1", "dn2"]);
        assert_eq!(expand_names("dn$1-3").unwrap(), ["dn1", "dn2", "dn3"]);
        assert_eq!(expand_names("db$01-03").unwrap(), ["db1", "db2", "db3"]);
        assert_eq!(expand_names("dn1$0-2").unwrap(), ["dn10", "dn11", "dn12"]);
        assert_eq!(expand_names("dn$5").unwrap(), ["dn5"]);
        assert_eq!(expand_names("dn$3-1").unwrap(), Vec::<String>::new());
        assert_eq!(
            expand_names("mycat-demo-dn$1-2, x ,,").unwrap(),
            ["mycat-demo-dn1", "mycat-demo-dn2", "x"]
        );
        let e = expand_names("dn$a-3").unwrap_err();
        assert_eq!(
            e,
            super::BadRange {
                item: "dn$a-3".into(),
                bound: "a".into()
            }
        );
        assert_eq!(e.to_string(), "bad range 'dn$a-3': 'a' is not an integer");
    }
}

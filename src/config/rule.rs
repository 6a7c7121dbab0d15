//! `rule.xml`: `<tableRule>`s and `<function>`s (SPEC §2.1). Functions are only described here;
//! `route::function` builds them (it owns the partition arithmetic).

use std::collections::BTreeMap;
use std::path::Path;

use super::xml;
use super::{ConfigError, ConfigWarning, FunctionConfig, TableRuleConfig, check_attrs};

type Rules = (
    BTreeMap<String, TableRuleConfig>,
    BTreeMap<String, FunctionConfig>,
);

pub(super) fn load(
    path: &Path,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<Rules> {
    let root = match xml::parse_file(path) {
        Ok(r) => r,
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    if root.name != "rule" {
        errors.push(ConfigError::new(
            &root.origin,
            &root.name,
            "root element must be <mycat:rule>",
        ));
        return None;
    }
    let mut functions = BTreeMap::new();
    for f in root.children_named("function") {
        check_attrs(f, &["name", "class"], &[], warnings);
        let name = f.attr("name").unwrap_or("");
        let element = format!("function name=\"{name}\"");
        let class = f.attr("class").unwrap_or("");
        if name.is_empty() || class.is_empty() {
            errors.push(ConfigError::new(
                &f.origin,
                element,
                "attributes name and class are required",
            ));
            continue;
        }
        if functions.contains_key(name) {
            errors.push(ConfigError::new(
                &f.origin,
                element,
                format!("rule function {name} duplicated"),
            ));
            continue;
        }
        let properties = f.properties().into_iter().map(|(k, v, _)| (k, v)).collect();
        functions.insert(
            name.to_string(),
            FunctionConfig {
                name: name.to_string(),
                class: class.to_string(),
                properties,
                origin: f.origin.clone(),
            },
        );
    }
    let mut rules = BTreeMap::new();
    for t in root.children_named("tableRule") {
        check_attrs(t, &["name"], &[], warnings);
        let name = t.attr("name").unwrap_or("");
        let element = format!("tableRule name=\"{name}\"");
        if name.is_empty() {
            errors.push(ConfigError::new(
                &t.origin,
                element,
                "attribute name is required",
            ));
            continue;
        }
        let inner: Vec<_> = t.children_named("rule").collect();
        if inner.len() != 1 {
            errors.push(ConfigError::new(
                &t.origin,
                element,
                format!("only one <rule> can be defined in tableRule {name}"),
            ));
            continue;
        }
        let rule = inner[0];
        let columns = rule
            .children_named("columns")
            .next()
            .map(|c| c.text.as_str());
        let algorithm = rule
            .children_named("algorithm")
            .next()
            .map(|c| c.text.as_str());
        let (Some(columns), Some(algorithm)) = (columns, algorithm) else {
            errors.push(ConfigError::new(
                &rule.origin,
                element,
                "<rule> needs <columns> and <algorithm>",
            ));
            continue;
        };
        // Mycat neither trims these nor accepts several columns (SPEC §1.10, §2.1). A padded
        // value would silently never match in Mycat; manx refuses it instead.
        if columns.contains(',') {
            errors.push(ConfigError::new(
                &rule.origin,
                element,
                format!("table rule columns has multi values: {columns}"),
            ));
            continue;
        }
        if columns.trim() != columns || algorithm.trim() != algorithm {
            errors.push(ConfigError::new(
                &rule.origin,
                element,
                "<columns>/<algorithm> text has surrounding white space, which Mycat never matches",
            ));
            continue;
        }
        if !functions.contains_key(algorithm) {
            errors.push(ConfigError::new(
                &rule.origin,
                element,
                format!("can't find function of name: {algorithm}"),
            ));
            continue;
        }
        if rules.contains_key(name) {
            errors.push(ConfigError::new(
                &t.origin,
                element,
                format!("table rule {name} duplicated"),
            ));
            continue;
        }
        rules.insert(
            name.to_string(),
            TableRuleConfig {
                name: name.to_string(),
                column: columns.to_ascii_uppercase(),
                function: algorithm.to_string(),
                origin: rule.origin.clone(),
            },
        );
    }
    Some((rules, functions))
}

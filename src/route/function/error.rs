//! Why a partition function cannot be built: what Mycat's `init()` would throw, as typed values.

use thiserror::Error;

/// Why a rule.xml `<function>` cannot be built. The texts are Mycat's own where Mycat has one
/// (its exception messages, with the Java exception class in parentheses); `tests/config.rs` and
/// the routing vectors quote them. Configuration loading names the `<function>` and its file
/// and line around it ([`crate::config::ConfigError`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FunctionError {
    /// A class that is not one of Mycat's built-ins: a deployment's custom class cannot run here.
    #[error("unknown partition function class {0}")]
    UnknownClass(String),
    /// A property the function cannot do without is absent.
    #[error("property {0} is required")]
    Required(String),
    /// An `int` property whose text Java's `Integer.parseInt` refuses.
    #[error("property {name}: '{value}' is not an int (NumberFormatException)")]
    NotAnInt { name: String, value: String },
    /// A map file (`mapFile`, `weightMapFile`) or ruledata file that cannot be read or written;
    /// the text names the path and the system's error.
    #[error("{0}")]
    File(String),
    /// A property, map file or ruledata file whose content the function's `init()` rejects,
    /// in Mycat's words (for example `error,check your partitionScope definition.`).
    #[error("{0}")]
    Invalid(String),
    /// A date function's failure, prefixed with its class name as Mycat reports it.
    #[error("{class}: {source}")]
    Class {
        class: String,
        #[source]
        source: Box<FunctionError>,
    },
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::FunctionError;
    use crate::config::MycatVersion;
    use crate::route::function::{BuildContext, build};

    fn build_err(class: &str, props: &[(&str, &str)]) -> FunctionError {
        let props: BTreeMap<String, String> = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let read = |name: &str| Err(format!("cannot read map file {name}"));
        let ctx = BuildContext {
            version: MycatVersion::V1_6_7_6,
            read_map_file: &read,
            time_zone: Some("UTC"),
            now_ms: None,
            table: None,
        };
        match build(class, &props, &ctx) {
            Ok(f) => panic!("{class} built: {f:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn each_failure_is_its_own_variant_with_mycats_text() {
        let e = build_err("com.example.MyFunction", &[]);
        assert_eq!(
            e,
            FunctionError::UnknownClass("com.example.MyFunction".into())
        );
        assert_eq!(
            e.to_string(),
            "unknown partition function class com.example.MyFunction"
        );

        let e = build_err(
            "io.mycat.route.function.PartitionByMod",
            &[("count", "three")],
        );
        assert_eq!(
            e,
            FunctionError::NotAnInt {
                name: "count".into(),
                value: "three".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "property count: 'three' is not an int (NumberFormatException)"
        );

        let e = build_err("PartitionByFileMap", &[("mapFile", "missing.txt")]);
        assert_eq!(
            e,
            FunctionError::File("cannot read map file missing.txt".into())
        );

        // A date function's failure names its class, around the typed cause.
        let e = build_err(
            "PartitionByMonth",
            &[("dateFormat", "yyyy-MM-dd"), ("sEndDate", "2015-01-01")],
        );
        let FunctionError::Class { class, source } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(class, "PartitionByMonth");
        assert_eq!(**source, FunctionError::Required("sBeginDate".into()));
        assert_eq!(
            e.to_string(),
            "PartitionByMonth: property sBeginDate is required"
        );
    }
}

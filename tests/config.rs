//! Loading Mycat configuration directories: the bundled config, Mycat's own sample sets, and
//! every kind of bad input, each with the exact message (file, line, element).

mod common;

use std::path::{Path, PathBuf};

use manx::config::{Config, MycatVersion, TableKind};
use manx::route::Router;

fn repo() -> PathBuf {
    common::repo()
}

/// A copy of the bundled config in a temporary directory, with `edit` applied to one file.
fn bundled_with(file: &str, edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let dir = common::xml::bundled_dir();
    common::xml::edit(dir.path(), file, edit);
    dir
}

/// Loads `dir` through everything start-up does (config, then routing) and returns the errors.
fn errors(dir: &Path) -> String {
    match Config::load(dir) {
        Err(e) => e.to_string(),
        Ok(c) => match Router::new(&c) {
            Err(e) => e.to_string(),
            Ok(_) => panic!(
                "the configuration in {} loaded without error",
                dir.display()
            ),
        },
    }
}

/// 1-based line of the first occurrence of `needle` in `file` of `dir`.
fn line_of(dir: &Path, file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let offset = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in {file}"));
    text[..offset].matches('\n').count() + 1
}

#[test]
fn the_bundled_config_loads() {
    let c = Config::load(&repo()).unwrap();
    assert_eq!(c.system.server_port, 8066);
    assert_eq!(c.system.mycat_version, MycatVersion::V1_6_7_6);
    let s = &c.schemas["TESTDB"];
    assert_eq!(s.tables["TRAVELRECORD"].data_nodes, ["dn1", "dn2", "dn3"]);
    assert_eq!(s.tables["EMPLOYEE"].data_nodes, ["dn1", "dn2"]);
    assert_eq!(s.tables["COMPANY"].kind, TableKind::Global);
    assert_eq!(c.data_nodes["dn2"].database, "db2");
    let host = &c.data_hosts["localhost1"];
    assert_eq!((host.max_con, host.min_con, host.balance), (100, 2, 0));
    assert_eq!(host.write_hosts[0].host.port, 13306);
    assert_eq!(host.write_hosts[0].read_hosts[0].port, 13307);
    assert_eq!(c.table_rules["sharding-by-intfile"].column, "SHARDING_ID");
    assert!(c.users["user"].read_only);
    assert_eq!(c.users["root"].schemas, ["TESTDB"]);
    Router::new(&c).unwrap();
}

#[test]
fn malformed_xml_names_file_and_line() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace("<table name=\"hotnews\"", "<table name=\"hotnews\"\" ")
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "schema.xml", "<table name=\"hotnews\"");
    assert!(e.contains(&format!("schema.xml:{line}")), "{e}");
    assert!(e.contains("malformed XML"), "{e}");
}

#[test]
fn unknown_data_node_is_refused_with_the_table() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            "dataNode=\"dn1,dn2\" rule=\"sharding-by-intfile\"",
            "dataNode=\"dn1,dn9\" rule=\"sharding-by-intfile\"",
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "schema.xml", "name=\"employee\"");
    assert!(
        e.contains(&format!(
            "schema.xml:{line}: <table name=\"EMPLOYEE\">: dataNode 'dn9' is not found"
        )),
        "{e}"
    );
}

#[test]
fn missing_function_is_refused_in_rule_xml() {
    let dir = bundled_with("rule.xml", |s| {
        s.replace(
            "<algorithm>mod-long</algorithm>",
            "<algorithm>mod-lung</algorithm>",
        )
    });
    let e = errors(dir.path());
    let line = line_of(
        dir.path(),
        "rule.xml",
        "<rule>\n\t\t\t<columns>id</columns>\n\t\t\t<algorithm>mod-lung",
    );
    assert!(
        e.contains(&format!(
            "rule.xml:{line}: <tableRule name=\"mod-long\">: can't find function of name: mod-lung"
        )),
        "{e}"
    );
    // And the table that uses the rule is refused too.
    assert!(e.contains("rule mod-long is not found in rule.xml"), "{e}");
}

#[test]
fn unknown_rule_on_a_table_is_refused() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace("rule=\"mod-long\"", "rule=\"nope\"")
    });
    let e = errors(dir.path());
    assert!(
        e.contains("<table name=\"HOTNEWS\">: rule nope is not found in rule.xml"),
        "{e}"
    );
}

#[test]
fn bad_map_file_line_is_refused_with_its_line() {
    let dir = bundled_with("autopartition-long.txt", |s| format!("{s}\n1500M-x=3\n"));
    let e = errors(dir.path());
    assert!(e.contains("<function name=\"rang-long\">"), "{e}");
    assert!(
        e.contains("map file autopartition-long.txt line 7 '1500M-x=3'"),
        "{e}"
    );
    let dir = bundled_with("rule.xml", |s| {
        s.replace("partition-hash-int.txt", "no-such-file.txt")
    });
    let e = errors(dir.path());
    assert!(
        e.contains("cannot read map file") && e.contains("no-such-file.txt"),
        "{e}"
    );
}

#[test]
fn unknown_function_classes_and_bad_properties_are_named() {
    let dir = bundled_with("rule.xml", |s| {
        s.replace(
            "io.mycat.route.function.PartitionByMod",
            "com.example.MyFunction",
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("unknown partition function class com.example.MyFunction"),
        "{e}"
    );
    let dir = bundled_with("rule.xml", |s| {
        s.replace(
            "<property name=\"count\">3</property>",
            "<property name=\"count\">three</property>",
        )
    });
    let e = errors(dir.path());
    assert!(e.contains("property count: 'three' is not an int"), "{e}");
}

#[test]
fn other_built_in_functions_load_from_rule_xml() {
    // PartitionByMurmurHash with count 3 on hotnews' three dataNodes.
    let dir = bundled_with("rule.xml", |s| {
        s.replace(
            "io.mycat.route.function.PartitionByMod",
            "io.mycat.route.function.PartitionByMurmurHash",
        )
    });
    let c = Config::load(dir.path()).unwrap();
    let r = Router::new(&c).unwrap();
    let hotnews = &r.schema("TESTDB").unwrap().tables["HOTNEWS"];
    assert!(hotnews.partition_of("1").unwrap() < 3);
}

#[test]
fn too_few_data_nodes_for_the_function() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            "dataNode=\"dn1,dn2,dn3\" rule=\"mod-long\"",
            "dataNode=\"dn1,dn2\" rule=\"mod-long\"",
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("partition size : 3 > table datanode size : 2"),
        "{e}"
    );
}

#[test]
fn data_node_ranges_must_pair_up() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            "<dataNode name=\"dn$1-3\" dataHost=\"localhost1\" database=\"db$1-3\" />",
            "<dataNode name=\"dn$1-3\" dataHost=\"localhost1\" database=\"db$1-2\" />",
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("3 names must equal 1 dataHosts x 2 databases"),
        "{e}"
    );
}

#[test]
fn users_must_name_existing_schemas_and_hosts_need_their_attributes() {
    let dir = bundled_with("server.xml", |s| {
        s.replace(
            "<property name=\"schemas\">TESTDB</property>\n\t\t<property name=\"readOnly\">",
            "<property name=\"schemas\">TESTDB,NOPE</property>\n\t\t<property name=\"readOnly\">",
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "server.xml", "<user name=\"user\">");
    assert!(e.contains(&format!("server.xml:{line}: <user name=\"user\">: schema NOPE referred by user user does not exist")), "{e}");
    let dir = bundled_with("schema.xml", |s| {
        s.replace("maxCon=\"100\"", "maxCon=\"many\"")
            .replace("writeType=\"0\"", "writeType=\"2\" balanceType=\"3\"")
    });
    let e = errors(dir.path());
    assert!(e.contains("maxCon 'many' is not an integer"), "{e}");
    assert!(e.contains("balanceType 3 is not one of 0, 1, 2"), "{e}");
    assert!(
        e.contains("writeType=\"2\" fails every write in Mycat and is refused"),
        "{e}"
    );
}

#[test]
fn every_error_is_reported_at_once() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace("dataNode=\"dn1,dn2\"", "dataNode=\"dn1,dn8\"")
            .replace("rule=\"mod-long\"", "rule=\"nope\"")
    });
    let e = errors(dir.path());
    assert!(e.contains("dn8") && e.contains("nope"), "{e}");
}

#[test]
fn mycat_shipped_configs_load_or_name_what_is_unsupported() {
    let configs = repo().join("../shared/mycat-compat/configs");
    for entry in std::fs::read_dir(&configs).unwrap() {
        let dir = entry.unwrap().path();
        match Config::load(&dir) {
            Ok(c) => {
                if let Err(e) = Router::new(&c) {
                    let text = e.to_string();
                    assert!(
                        text.contains("does not implement yet")
                            || text.contains("cannot read map file"),
                        "{}: {text}",
                        dir.display()
                    );
                }
            }
            Err(e) => {
                // Every error names a file and line, and says what it is.
                for err in &e.0 {
                    assert!(err.origin.line > 0, "{}: {err}", dir.display());
                }
            }
        }
    }
}

#[test]
fn crc32_slot_tables_get_their_own_slot_file() {
    // hotnews on three dataNodes with the crc32slot function (whose count property says 2).
    let dir = bundled_with("rule.xml", |s| {
        s.replace(
            r#"<function name="mod-long" class="io.mycat.route.function.PartitionByMod">"#,
            r#"<function name="mod-long" class="io.mycat.route.function.PartitionByCRC32PreSlot"><property name="count">2</property>"#,
        )
        .replace("<property name=\"count\">3</property>\n", "")
    });
    let c = Config::load(dir.path()).unwrap();
    let r = Router::new(&c).unwrap();
    let file = dir
        .path()
        .join("ruledata/mod-long_TESTDB_HOTNEWS.properties");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("\n0=0-34132\n1=34133-68265\n2=68266-102399\n"),
        "1.6.7 splits over the table's 3 nodes: {text}"
    );
    let hotnews = &r.schema("TESTDB").unwrap().tables["HOTNEWS"];
    // Mycat's own test values for 3 nodes: 1→1, 3→0, 4→2.
    assert_eq!(hotnews.partition_of("1").unwrap(), 1);
    assert_eq!(hotnews.partition_of("3").unwrap(), 0);
    assert_eq!(hotnews.partition_of("4").unwrap(), 2);
    // An existing (migrated) slot file is what decides placement.
    std::fs::write(&file, "0=0-102399\n1=\n2=\n").unwrap();
    let r = Router::new(&Config::load(dir.path()).unwrap()).unwrap();
    let hotnews = &r.schema("TESTDB").unwrap().tables["HOTNEWS"];
    assert_eq!(hotnews.partition_of("4").unwrap(), 0);
}

#[test]
fn datahost_failover_and_heartbeat_settings() {
    // Defaults: Mycat's code defaults.
    let c = Config::load(&repo()).unwrap();
    let h = &c.data_hosts["localhost1"];
    assert!(!h.temp_read_host_available && !h.not_switch);
    assert_eq!((h.max_retry_count, h.slave_threshold), (3, 100));
    assert_eq!(
        (c.system.heartbeat_period_ms, c.system.heartbeat_timeout_ms),
        (10_000, 30_000)
    );
    // Set, and acted on: no "accepted but not acted on" warning for them.
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            r#"slaveThreshold="100">"#,
            r#"slaveThreshold="100" tempReadHostAvailable="1" maxRetryCount="5" notSwitch="1">"#,
        )
    });
    std::fs::write(
        dir.path().join("server.xml"),
        std::fs::read_to_string(repo().join("server.xml")).unwrap().replace(
            "<system>",
            r#"<system><property name="dataNodeHeartbeatPeriod">500</property><property name="heartbeatTimeout">2000</property>"#,
        ),
    )
    .unwrap();
    let c = Config::load(dir.path()).unwrap();
    let h = &c.data_hosts["localhost1"];
    assert!(h.temp_read_host_available && h.not_switch);
    assert_eq!(h.max_retry_count, 5);
    assert_eq!(
        (c.system.heartbeat_period_ms, c.system.heartbeat_timeout_ms),
        (500, 2_000)
    );
    assert!(
        !c.warnings.iter().any(|w| {
            let m = w.to_string();
            m.contains("tempReadHostAvailable")
                || m.contains("maxRetryCount")
                || m.contains("notSwitch")
                || m.contains("slaveThreshold")
                || m.contains("dataNodeHeartbeatPeriod")
        }),
        "{:?}",
        c.warnings
    );
    // Bad values are errors naming the attribute.
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            r#"slaveThreshold="100">"#,
            r#"slaveThreshold="100" tempReadHostAvailable="yes" maxRetryCount="0">"#,
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("tempReadHostAvailable 'yes' is not an integer")
            && e.contains("maxRetryCount 0 is not between 1 and 1000"),
        "{e}"
    );
    let dir = bundled_with("server.xml", |s| {
        s.replace(
            "<system>",
            r#"<system><property name="dataNodeHeartbeatPeriod">soon</property>"#,
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("dataNodeHeartbeatPeriod 'soon' is not a positive number of milliseconds"),
        "{e}"
    );
}

#[test]
fn sequence_handler_spellings_must_agree_and_be_known() {
    let dir = bundled_with("server.xml", |s| {
        s.replacen(
            "<system>",
            "<system>\n\t\t<property name=\"sequenceHandlerType\">1</property>\n\t\t<property name=\"sequnceHandlerType\">2</property>",
            1,
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "server.xml", "name=\"sequnceHandlerType\"");
    assert!(
        e.contains(&format!(
            "server.xml:{line}: <property name=\"sequnceHandlerType\">: sequnceHandlerType 2 contradicts sequenceHandlerType 1"
        )),
        "{e}"
    );
    let dir = bundled_with("server.xml", |s| {
        s.replacen(
            "<system>",
            "<system>\n\t\t<property name=\"sequnceHandlerType\">seven</property>",
            1,
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("sequnceHandlerType 'seven' is not a sequence handler type (0-5)"),
        "{e}"
    );
    // The 1.6.5 spelling alone selects the handler.
    let dir = bundled_with("server.xml", |s| {
        s.replacen(
            "<system>",
            "<system>\n\t\t<property name=\"sequnceHandlerType\">2</property>",
            1,
        )
    });
    let c = Config::load(dir.path()).unwrap();
    assert_eq!(c.system.sequence_handler_type, 2);
}

/// Ciphertexts made with Mycat's `DecryptUtil` key (Druid's ConfigTools default pair).
const ENC_USER: &str =
    "lvOcJa2dR6ZDY3smdMusR/7eTwQuYmBmAyPE2XoJWqIbGoX7KU26pv+h05OR41zsMk2Un37OwZbqoIYy0mA0Qw=="; // 0:enc:enc
const HOST_M1_MANX: &str =
    "TEuYMn9wN50uop0lncCftFmf1MbyxsML4Nv0HoTD9/+SW9pi8+L6ZOO/5JmRlaBBMxjinCyQOEkYhxLt9iwnOg=="; // 1:hostM1:manx:manx
const HOST_M1_OTHER: &str =
    "OVCZd44EQh66wYhejKpKkZy4oir4fSIBGRbGzMCRWDb0Nqv5E+5x8hMdeGRTYu5NpUnGnaEgnZh2okLtzvk0iw=="; // 1:hostM1:other:manx

#[test]
fn encrypted_passwords_are_decrypted_as_mycat_does() {
    let dir = bundled_with("server.xml", |s| {
        s.replace(
            "</mycat:server>",
            &format!(
                r#"<user name="enc"><property name="password">{ENC_USER}</property><property name="schemas">TESTDB</property><property name="usingDecrypt">1</property></user></mycat:server>"#
            ),
        )
    });
    std::fs::write(
        dir.path().join("schema.xml"),
        std::fs::read_to_string(dir.path().join("schema.xml"))
            .unwrap()
            .replace(
                r#"user="manx_gw" password="manx_gw">"#,
                &format!(r#"user="manx" password="{HOST_M1_MANX}" usingDecrypt="1">"#),
            ),
    )
    .unwrap();
    let c = Config::load(dir.path()).unwrap();
    assert_eq!(c.users["enc"].password, "enc");
    let host = &c.data_hosts["localhost1"].write_hosts[0];
    assert_eq!(host.host.password, "manx");

    // A ciphertext for another user or host is refused with Mycat's message, at its line.
    let dir = bundled_with("server.xml", |s| {
        s.replace(
            "</mycat:server>",
            &format!(
                r#"<user name="someone"><property name="password">{ENC_USER}</property><property name="schemas">TESTDB</property><property name="usingDecrypt">true</property></user></mycat:server>"#
            ),
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("user someone passwrod need to decrype ,but decrype password is wrong !"),
        "{e}"
    );
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            r#"user="manx_gw" password="manx_gw">"#,
            &format!(r#"user="manx" password="{HOST_M1_OTHER}" usingDecrypt="1">"#),
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "schema.xml", "usingDecrypt=\"1\"");
    assert!(
        e.contains(&format!(
            "schema.xml:{line}: <writeHost host=\"hostM1\">: host hostM1,user manx password need to decrype ,but decrype password is wrong !"
        )),
        "{e}"
    );
}

#[test]
fn sub_tables_are_refused_not_misread() {
    let dir = bundled_with("schema.xml", |s| {
        s.replace(
            r#"<table name="hotnews" primaryKey="id""#,
            r#"<table name="hotnews" subTables="hotnews$1-4" primaryKey="id""#,
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "schema.xml", "subTables=");
    assert!(
        e.contains(&format!(
            "schema.xml:{line}: <table name=\"hotnews\">: subTables (sub-table sharding inside one dataNode) is not supported"
        )),
        "{e}"
    );
}

/// A `<privileges>` mask naming a schema or table that does not exist guards nothing: an error.
#[test]
fn privileges_must_name_existing_schemas_and_tables() {
    let dir = bundled_with("server.xml", |s| {
        s.replace(
            r#"<property name="readOnly">true</property>"#,
            r#"<property name="readOnly">true</property>
        <privileges check="true">
            <schema name="TESTDB" dml="1111">
                <table name="hotnews" dml="0010" />
                <table name="hotnewz" dml="0000" />
            </schema>
            <schema name="NOPE" dml="0000" />
        </privileges>"#,
        )
    });
    let e = errors(dir.path());
    assert!(
        e.contains("<privileges> names table hotnewz of schema TESTDB, which does not exist"),
        "{e}"
    );
    assert!(
        e.contains("<privileges> names schema NOPE, which does not exist"),
        "{e}"
    );
    assert!(!e.contains("hotnews "), "{e}");
}

#[test]
fn fake_mysql_version_must_be_a_version_number() {
    let dir = bundled_with("server.xml", |s| {
        s.replacen(
            "<system>",
            "<system>\n\t\t<property name=\"fakeMySQLVersion\">8.0.33'; x</property>",
            1,
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "server.xml", "name=\"fakeMySQLVersion\"");
    assert!(
        e.contains(&format!(
            "server.xml:{line}: <property name=\"fakeMySQLVersion\">: fakeMySQLVersion '8.0.33'; x' is not a MySQL version number"
        )),
        "{e}"
    );
}

#[test]
fn explain_mode_is_route_or_backend() {
    let dir = bundled_with("server.xml", |s| {
        s.replacen(
            "<system>",
            "<system>\n\t\t<property name=\"explainMode\">plan</property>",
            1,
        )
    });
    let e = errors(dir.path());
    let line = line_of(dir.path(), "server.xml", "name=\"explainMode\"");
    assert!(
        e.contains(&format!(
            "server.xml:{line}: <property name=\"explainMode\">: explainMode 'plan' is not route"
        )),
        "{e}"
    );
    for (value, mode) in [
        ("route", manx::config::ExplainMode::Route),
        ("backend", manx::config::ExplainMode::Backend),
    ] {
        let dir = bundled_with("server.xml", |s| {
            s.replacen(
                "<system>",
                &format!("<system>\n\t\t<property name=\"explainMode\">{value}</property>"),
                1,
            )
        });
        let config = Config::load(dir.path()).unwrap();
        assert_eq!(config.system.explain_mode, mode);
    }
}

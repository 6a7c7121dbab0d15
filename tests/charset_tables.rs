//! MariaDB's single-byte character sets as the gateway converts them
//! (`manx::charset::single_byte`), re-derived from the sandbox MariaDB and compared entry by
//! entry: each byte's character, the byte of each character of the BMP, one character outside
//! it, and each set's collations (ids and default) as `information_schema.COLLATIONS` lists
//! them. A wrong entry in the committed tables cannot survive this test.

mod common;

use manx::charset::{
    Charset,
    single_byte::{SingleByte, TABLES, UNDEFINED},
};
use mysql_async::prelude::*;

/// Each byte's code point as MariaDB converts it to UTF-32 ([`UNDEFINED`] for `?`, a byte the
/// set does not define).
async fn decode_on_server(c: &mut mysql_async::Conn, cs: &str) -> Vec<u16> {
    let rows: Vec<(u32, String)> = c
        .query(format!(
            "SELECT seq, HEX(CONVERT(CONVERT(UNHEX(LPAD(HEX(seq), 2, '0')) USING {cs}) USING utf32)) \
             FROM seq_0_to_255 ORDER BY seq"
        ))
        .await
        .unwrap();
    rows.into_iter()
        .map(|(b, hex)| match u16::from_str_radix(&hex, 16).unwrap() {
            0x3F if b != 0x3F => UNDEFINED,
            u => u,
        })
        .collect()
}

/// Each character of the BMP (surrogates aside) MariaDB converts to a byte of `cs` other than
/// `?`, with that byte (and `?` itself).
async fn encode_on_server(c: &mut mysql_async::Conn, cs: &str) -> Vec<(u16, u8)> {
    let rows: Vec<(u16, String)> = c
        .query(format!(
            "SELECT seq, h FROM (SELECT seq, HEX(CONVERT(CONVERT(UNHEX(LPAD(HEX(seq), 8, '0')) \
             USING utf32) USING {cs})) AS h FROM seq_0_to_65535 \
             WHERE seq NOT BETWEEN 55296 AND 57343) AS x WHERE h <> '3F' OR seq = 63 ORDER BY seq"
        ))
        .await
        .unwrap();
    rows.into_iter()
        .map(|(c, hex)| (c, u8::from_str_radix(&hex, 16).unwrap()))
        .collect()
}

#[tokio::test]
async fn every_single_byte_table_is_mariadbs() {
    let mut c = common::primary(Some("mysql")).await;
    // Every single-byte character set MariaDB has, but binary, has a table.
    let names: Vec<String> = c
        .query(
            "SELECT character_set_name FROM information_schema.CHARACTER_SETS \
             WHERE maxlen = 1 AND character_set_name <> 'binary' ORDER BY 1",
        )
        .await
        .unwrap();
    let mut ours: Vec<&str> = TABLES.iter().map(|(n, _)| *n).collect();
    ours.sort();
    assert_eq!(names, ours);
    for (name, table) in TABLES {
        let table: &SingleByte = table;
        assert_eq!(
            table.decode.to_vec(),
            decode_on_server(&mut c, name).await,
            "{name}: the bytes' characters"
        );
        assert_eq!(
            table.encode.to_vec(),
            encode_on_server(&mut c, name).await,
            "{name}: the characters' bytes"
        );
        // Outside the BMP: `?`, as the table says of any character it does not hold.
        let emoji: String = c
            .query_first(format!(
                "SELECT HEX(CONVERT(_utf8mb4 X'F09F9880' USING {name}))"
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(emoji, "3F", "{name}");
        // The character set the gateway converts with it, under its collations.
        let cs = Charset::by_name(name).unwrap_or_else(|| panic!("{name} is converted"));
        assert!(std::ptr::eq(cs.single_byte().unwrap(), table), "{name}");
        let collations: Vec<(u16, String, String)> = c
            .query(format!(
                "SELECT id, collation_name, is_default FROM information_schema.COLLATIONS \
                 WHERE character_set_name = '{name}' AND id < 256 ORDER BY id"
            ))
            .await
            .unwrap();
        let mut ids: Vec<u16> = cs
            .other_collation_ids
            .iter()
            .map(|&i| u16::from(i))
            .collect();
        ids.push(u16::from(cs.default_collation_id));
        ids.sort();
        assert_eq!(
            ids,
            collations.iter().map(|c| c.0).collect::<Vec<_>>(),
            "{name}: collation ids"
        );
        let default = collations.iter().find(|c| c.2 == "Yes").unwrap();
        assert_eq!(
            (u16::from(cs.default_collation_id), cs.default_collation),
            (default.0, default.1.as_str()),
            "{name}: default collation"
        );
        for (id, _, _) in &collations {
            assert!(
                std::ptr::eq(Charset::by_collation_id(*id).unwrap(), cs),
                "{name} {id}"
            );
        }
    }
}

// A JDBC application's session with MariaDB Connector/J, run once against a MySQL-backed and
// once against a PostgreSQL-backed schema (tests/client_matrix.rs): the two transcripts must be
// equal. The schema's default dataNode takes table jt; table jorders is sharded by id.
// usage: java -cp target/clients-java:mariadb-java-client.jar JdbcTypes PORT USER PASSWORD SCHEMA [URL-OPTIONS]
// Prints one `step=value` line per step (`step=ERROR <class> <errno> <message>` on failure).
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class JdbcTypes {
    static Connection conn;

    interface Step { Object run() throws Exception; }

    static void step(String name, Step s) {
        try {
            System.out.println(name + "=" + s.run());
        } catch (SQLException e) {
            System.out.println(name + "=ERROR " + e.getClass().getName() + " " + e.getErrorCode() + " "
                    + String.valueOf(e.getMessage()).replace('\n', ' '));
        } catch (Exception e) {
            System.out.println(name + "=ERROR " + e.getClass().getName() + " null "
                    + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
        System.out.flush();
    }

    static String hex(byte[] b) {
        if (b == null) return "NULL";
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    /// Every value as getObject's class and its text (bytes as hex).
    static String objects(ResultSet rs) throws SQLException {
        StringBuilder sb = new StringBuilder();
        int n = rs.getMetaData().getColumnCount();
        while (rs.next()) {
            if (sb.length() > 0) sb.append(';');
            for (int i = 1; i <= n; i++) {
                if (i > 1) sb.append('|');
                Object o = rs.getObject(i);
                if (o == null) sb.append("NULL");
                else if (o instanceof byte[]) sb.append("byte[]:").append(hex((byte[]) o));
                else sb.append(o.getClass().getSimpleName()).append(':').append(o);
            }
        }
        rs.close();
        return sb.toString();
    }

    static String strings(ResultSet rs, String... columns) throws SQLException {
        StringBuilder sb = new StringBuilder();
        while (rs.next()) {
            if (sb.length() > 0) sb.append(';');
            for (int i = 0; i < columns.length; i++) {
                if (i > 0) sb.append('|');
                sb.append(rs.getString(columns[i]));
            }
        }
        rs.close();
        return sb.toString();
    }

    /// Column metadata as the driver reports it: label, JDBC type, type name, signedness.
    static String meta(ResultSetMetaData m) throws SQLException {
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= m.getColumnCount(); i++) {
            if (i > 1) sb.append(';');
            sb.append(m.getColumnLabel(i)).append(':').append(m.getColumnType(i)).append(':')
                    .append(m.getColumnTypeName(i)).append(':').append(m.isSigned(i) ? "signed" : "unsigned")
                    .append(':').append(m.getColumnClassName(i));
        }
        return sb.toString();
    }

    /// A driver's start-up probe: every column labelled as asked, the numeric ones numbers, the
    /// isolation one of MySQL's four names.
    static String probe(String sql) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            ResultSetMetaData m = rs.getMetaData();
            if (!rs.next()) return "no row";
            List<String> bad = new ArrayList<>();
            for (int i = 1; i <= m.getColumnCount(); i++) {
                String label = m.getColumnLabel(i);
                String v = rs.getString(i);
                if (v == null && !label.equals("character_set_results")) bad.add(label + " NULL");
                if (Arrays.asList("auto_increment_increment", "max_allowed_packet", "net_buffer_length",
                        "net_write_timeout", "interactive_timeout", "wait_timeout", "lower_case_table_names",
                        "query_cache_size").contains(label)) {
                    try { Long.parseLong(v); } catch (NumberFormatException e) { bad.add(label + "=" + v); }
                }
                if (label.endsWith("isolation") && !Arrays.asList("READ-UNCOMMITTED", "READ-COMMITTED",
                        "REPEATABLE-READ", "SERIALIZABLE").contains(v)) bad.add(label + "=" + v);
            }
            return m.getColumnCount() + " columns" + (bad.isEmpty() ? "" : " bad: " + bad);
        }
    }

    static final String PROBE_51 = "/* mysql-connector-java-5.1.49 ( Revision: ad86f36e100e104cd926c6b81c8cab9565750116 ) */SELECT  @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, @@character_set_results AS character_set_results, @@character_set_server AS character_set_server, @@collation_server AS collation_server, @@collation_connection AS collation_connection, @@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, @@net_buffer_length AS net_buffer_length, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, @@query_cache_size AS query_cache_size, @@query_cache_type AS query_cache_type, @@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, @@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout";
    static final String PROBE_80 = "/* mysql-connector-j-8.0.33 (Revision: 7d6b0800528b6b25c68b52dc10d6c1c8429c100c) */SELECT  @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, @@character_set_results AS character_set_results, @@character_set_server AS character_set_server, @@collation_server AS collation_server, @@collation_connection AS collation_connection, @@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, @@query_cache_size AS query_cache_size, @@query_cache_type AS query_cache_type, @@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, @@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout";

    static void exec(String sql) throws SQLException {
        try (Statement st = conn.createStatement()) { st.execute(sql); }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + args[0] + "/" + args[3]
                + (args.length > 4 ? "?" + args[4] : "");
        step("connect", () -> { conn = DriverManager.getConnection(url, args[1], args[2]); return "ok"; });
        if (conn == null) return;

        // The official MySQL drivers' start-up sequences, replayed (texts from their sources).
        step("probe_connector_j_5_1", () -> probe(PROBE_51));
        step("probe_connector_j_8_0", () -> probe(PROBE_80));
        step("probe_mariadb_2", () -> probe("SELECT @@max_allowed_packet AS max_allowed_packet,@@system_time_zone,@@time_zone,@@auto_increment_increment AS auto_increment_increment"));
        step("probe_mariadb_2_fallback", () -> {
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(
                    "SHOW VARIABLES WHERE Variable_name in ('max_allowed_packet','system_time_zone','time_zone','auto_increment_increment')")) {
                List<String> names = new ArrayList<>();
                while (rs.next()) names.add(rs.getString(1));
                Collections.sort(names);
                return names;
            }
        });
        step("probe_go", () -> probe("SELECT @@max_allowed_packet AS max_allowed_packet"));
        step("read_only", () -> {
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("select @@session.transaction_read_only")) {
                rs.next();
                return Integer.parseInt(rs.getString(1));
            }
        });
        step("isolation_api", () -> conn.getTransactionIsolation() != Connection.TRANSACTION_NONE);
        step("read_only_api", () -> conn.isReadOnly());
        step("version", () -> conn.getMetaData().getDatabaseProductVersion().startsWith("5.7.25-manx"));

        step("ddl", () -> {
            exec("DROP TABLE IF EXISTS jt");
            exec("CREATE TABLE jt (id BIGINT NOT NULL AUTO_INCREMENT, i INT, s SMALLINT, t TINYINT, "
                    + "flag TINYINT(1), m MEDIUMINT, y YEAR, u INT UNSIGNED, bi BIGINT, dec1 DECIMAL(10,2), "
                    + "d DOUBLE, f FLOAT, vc VARCHAR(50), tx TEXT, b BLOB, vb VARBINARY(300), dt DATE, tm TIME, "
                    + "ts DATETIME, ts3 DATETIME(3), bits BIT(8), fixed BINARY(4), "
                    + "e ENUM('small','medium','it''s') NOT NULL, st SET('a','b','c') DEFAULT 'b', PRIMARY KEY (id))");
            return "ok";
        });
        byte[] everyByte = new byte[256];
        for (int i = 0; i < 256; i++) everyByte[i] = (byte) i;
        String ins = "INSERT INTO jt (i, s, t, flag, m, y, u, bi, dec1, d, f, vc, tx, b, vb, dt, tm, ts, ts3) "
                + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        step("insert_typed", () -> {
            try (PreparedStatement ps = conn.prepareStatement(ins, Statement.RETURN_GENERATED_KEYS)) {
                ps.setInt(1, -2147483648);
                ps.setShort(2, (short) -32768);
                ps.setByte(3, (byte) -128);
                ps.setBoolean(4, true);
                ps.setInt(5, 8388607);
                ps.setInt(6, 2024);
                ps.setLong(7, 4294967295L);
                ps.setLong(8, Long.MAX_VALUE);
                ps.setBigDecimal(9, new BigDecimal("-12345678.91"));
                ps.setDouble(10, 2.25e-7);
                ps.setFloat(11, 1.5f);
                ps.setString(12, "it's \"q\" \\ 中文 \uD83D\uDC2C");
                ps.setString(13, "line\nbreak\ttab");
                ps.setBytes(14, everyByte);
                ps.setBytes(15, new byte[] {0, (byte) 0xff, 0x27, 0x5c, 0x22, 0x0a});
                ps.setDate(16, java.sql.Date.valueOf("2024-02-29"));
                ps.setTime(17, java.sql.Time.valueOf("23:59:58"));
                ps.setTimestamp(18, java.sql.Timestamp.valueOf("2024-01-02 03:04:05"));
                ps.setTimestamp(19, java.sql.Timestamp.valueOf("2024-01-02 03:04:05.123"));
                int n = ps.executeUpdate();
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    keys.next();
                    return n + " key=" + keys.getLong(1);
                }
            }
        });
        step("insert_nulls", () -> {
            try (PreparedStatement ps = conn.prepareStatement(ins, Statement.RETURN_GENERATED_KEYS)) {
                ps.setInt(1, 7);
                for (int i = 2; i <= 19; i++) ps.setNull(i, Types.NULL);
                ps.setBoolean(4, false);
                int n = ps.executeUpdate();
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    keys.next();
                    return n + " key=" + keys.getLong(1);
                }
            }
        });
        step("select_typed", () -> {
            try (Statement st = conn.createStatement()) {
                return objects(st.executeQuery("SELECT * FROM jt ORDER BY id"));
            }
        });
        step("select_meta", () -> {
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM jt WHERE 1 = 0")) {
                return meta(rs.getMetaData());
            }
        });
        step("select_prepared", () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT id, flag, b, vb FROM jt WHERE flag = ? AND i = ?")) {
                ps.setBoolean(1, true);
                ps.setInt(2, -2147483648);
                return objects(ps.executeQuery());
            }
        });
        step("bytes_round_trip", () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT b FROM jt WHERE b = ?")) {
                ps.setBytes(1, everyByte);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && Arrays.equals(rs.getBytes(1), everyByte);
                }
            }
        });
        step("boolean_literals", () -> {
            try (Statement st = conn.createStatement()) {
                return objects(st.executeQuery("SELECT COUNT(*) FROM jt WHERE flag = TRUE")) + "/"
                        + objects(st.executeQuery("SELECT COUNT(*) FROM jt WHERE flag = 0"));
            }
        });
        step("literals", () -> {
            try (Statement st = conn.createStatement()) {
                st.executeUpdate("UPDATE jt SET bits = b'10100101', fixed = X'01020304' WHERE i = 7");
                return objects(st.executeQuery("SELECT X'4142', 0x4344, _binary'ef'")) + "/"
                        + objects(st.executeQuery("SELECT bits, fixed FROM jt WHERE bits = b'10100101'"));
            }
        });
        step("enum_set", () -> {
            try (Statement st = conn.createStatement()) {
                st.executeUpdate("UPDATE jt SET e = 'it''s', st = 'a,c' WHERE i = 7");
                String refused;
                try {
                    st.executeUpdate("UPDATE jt SET e = 'huge' WHERE i = 7");
                    refused = "accepted";
                } catch (SQLException e) {
                    refused = "refused " + e.getErrorCode() + " " + e.getSQLState();
                }
                String refusedSet;
                try {
                    st.executeUpdate("UPDATE jt SET st = 'a,d' WHERE i = 7");
                    refusedSet = "accepted";
                } catch (SQLException e) {
                    refusedSet = "refused " + e.getErrorCode() + " " + e.getSQLState();
                }
                return objects(st.executeQuery("SELECT e, st FROM jt ORDER BY id")) + "/" + refused + "/"
                        + refusedSet + "/" + objects(st.executeQuery("SELECT COUNT(*) FROM jt WHERE e = 'small'"));
            }
        });

        // Batches over the shards, and transactions.
        step("sharded_ddl", () -> {
            exec("DROP TABLE IF EXISTS jorders");
            exec("CREATE TABLE jorders (id BIGINT NOT NULL, amount DECIMAL(10,2), note VARCHAR(20), PRIMARY KEY (id))");
            return "ok";
        });
        step("batch", () -> {
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO jorders (id, amount, note) VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 9; i++) {
                    ps.setLong(1, i);
                    ps.setBigDecimal(2, new BigDecimal(i + ".25"));
                    ps.setString(3, "n" + i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                int sum = 0;
                for (int c : counts) sum += c == Statement.SUCCESS_NO_INFO ? 1 : c;
                return counts.length + "/" + sum;
            }
        });
        step("transaction", () -> {
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("UPDATE jorders SET amount = amount + ? WHERE id = ?")) {
                ps.setInt(1, 100);
                ps.setLong(2, 1);
                ps.executeUpdate();
                conn.rollback();
                ps.setInt(1, 1000);
                ps.setLong(2, 2);
                ps.executeUpdate();
                ps.setLong(2, 3);
                ps.executeUpdate();
                conn.commit();
            } finally {
                conn.setAutoCommit(true);
            }
            try (Statement st = conn.createStatement()) {
                return objects(st.executeQuery("SELECT id, amount, note FROM jorders ORDER BY id LIMIT 4"))
                        + " sum=" + objects(st.executeQuery("SELECT SUM(amount), COUNT(*) FROM jorders"));
            }
        });

        // DatabaseMetaData (information_schema through the gateway).
        step("meta_tables", () -> strings(conn.getMetaData().getTables(null, null, "j%", new String[] {"TABLE"}),
                "TABLE_NAME", "TABLE_TYPE"));
        step("meta_columns", () -> strings(conn.getMetaData().getColumns(null, null, "jt", "%"),
                "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "NULLABLE", "IS_AUTOINCREMENT"));
        step("meta_primary_key", () -> strings(conn.getMetaData().getPrimaryKeys(null, null, "jorders"),
                "COLUMN_NAME", "KEY_SEQ"));
        step("session_sets", () -> {
            exec("SET NAMES utf8mb4");
            exec("SET character_set_results = NULL");
            exec("SET autocommit=1");
            exec("set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')");
            return "ok";
        });
        step("close", () -> { conn.close(); return "ok"; });
        System.out.println("done");
    }
}

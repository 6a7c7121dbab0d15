// Client-matrix program for MariaDB Connector/J (tests/client_matrix.rs).
// usage: java -cp target/clients-java:mariadb-java-client.jar ConnJ PORT [URL-OPTIONS]
// e.g. URL-OPTIONS "useServerPrepStmts=true". Prints one `step=value` line per step, or
// `step=ERROR <class> <errno> <message>`, and goes on with the next step; the test compares
// the transcript with the expected one.
import java.sql.*;
import java.util.*;

public class ConnJ {
    static final String UNICODE = "emoji \uD83D\uDC2C\uD83C\uDF89 CJK 中文字符 日本語 한국어 ñ";
    static Connection conn;

    interface Step { Object run() throws Exception; }

    static void step(String name, Step s) {
        try {
            System.out.println(name + "=" + s.run());
        } catch (SQLException e) {
            System.out.println(name + "=ERROR " + e.getClass().getName() + " " + e.getErrorCode() + " "
                    + String.valueOf(e.getMessage()).replace('\n', ' '));
            e.printStackTrace();
        } catch (Exception e) {
            System.out.println(name + "=ERROR " + e.getClass().getName() + " null "
                    + String.valueOf(e.getMessage()).replace('\n', ' '));
            e.printStackTrace();
        }
        System.out.flush();
    }

    static String fmt(ResultSet rs) throws SQLException {
        StringBuilder sb = new StringBuilder();
        int n = rs.getMetaData().getColumnCount();
        while (rs.next()) {
            if (sb.length() > 0) sb.append(';');
            for (int i = 1; i <= n; i++) {
                if (i > 1) sb.append('|');
                String v = rs.getString(i);
                sb.append(v == null ? "NULL" : v);
            }
        }
        rs.close();
        return sb.toString();
    }

    static String query(String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) ps.setObject(i + 1, params[i]);
            return fmt(ps.executeQuery());
        }
    }

    static int update(String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) ps.setObject(i + 1, params[i]);
            return ps.executeUpdate();
        }
    }

    static final String INS = "INSERT INTO travelrecord (id, user_id, fee, days) VALUES (?, ?, ?, ?)";

    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + args[0] + "/TESTDB" + (args.length > 1 ? "?" + args[1] : "");
        step("connect", () -> { conn = DriverManager.getConnection(url, "root", "123456"); return "ok"; });
        if (conn == null) return;
        step("insert", () -> {
            int n = update(INS, 1L, "alice", new java.math.BigDecimal("10.50"), 1);
            n += update(INS, 5000001L, "bob 中文", new java.math.BigDecimal("20.25"), 2);
            n += update(INS, 10000001L, "carol \uD83D\uDC2C", new java.math.BigDecimal("30.00"), 3);
            n += update(INS, 10000002L, "dave", new java.math.BigDecimal("40.00"), 4);
            return n;
        });
        step("by_key", () -> query("SELECT id, user_id, fee, days FROM travelrecord WHERE id = ?", 5000001L) + ";"
                + query("SELECT id, user_id, fee, days FROM travelrecord WHERE id = ?", 10000001L));
        step("order_limit", () -> query("SELECT id, user_id FROM travelrecord ORDER BY id DESC LIMIT ?", 3));
        step("aggregate", () -> query("SELECT COUNT(*), SUM(fee), SUM(days) FROM travelrecord"));
        step("tx_commit", () -> {
            conn.setAutoCommit(false);
            try {
                update(INS, 2L, "tx", new java.math.BigDecimal("1.00"), 1);
                update(INS, 5000002L, "tx", new java.math.BigDecimal("1.00"), 1);
                conn.commit();
            } finally {
                conn.setAutoCommit(true);
            }
            return query("SELECT COUNT(*) FROM travelrecord");
        });
        step("tx_rollback", () -> {
            conn.setAutoCommit(false);
            String inside;
            try {
                update("INSERT INTO travelrecord (id, user_id) VALUES (?, ?)", 3L, "gone");
                update("INSERT INTO travelrecord (id, user_id) VALUES (?, ?)", 10000003L, "gone");
                update("UPDATE travelrecord SET user_id = ? WHERE id = ?", "changed", 1L);
                inside = query("SELECT COUNT(*) FROM travelrecord") + "|"
                        + query("SELECT user_id FROM travelrecord WHERE id = ?", 1L);
                conn.rollback();
            } finally {
                conn.setAutoCommit(true);
            }
            return inside + "|" + query("SELECT COUNT(*) FROM travelrecord") + "|"
                    + query("SELECT user_id FROM travelrecord WHERE id = ?", 1L);
        });
        step("unicode", () -> {
            update("INSERT INTO travelrecord (id, user_id) VALUES (?, ?)", 5000007L, UNICODE);
            String got = query("SELECT user_id FROM travelrecord WHERE id = ?", 5000007L);
            return got + "|" + (got.equals(UNICODE) ? "same" : "DIFFERENT") + "|"
                    + query("SELECT CHAR_LENGTH(user_id), LENGTH(user_id) FROM travelrecord WHERE id = ?", 5000007L);
        });
        step("duplicate", () -> {
            try {
                update("INSERT INTO travelrecord (id, user_id) VALUES (?, ?)", 10000001L, "dup");
            } catch (SQLIntegrityConstraintViolationException e) {
                return "IntegrityError " + e.getErrorCode();
            }
            return "no error";
        });
        step("after_error", () -> query("SELECT user_id FROM travelrecord WHERE id = ?", 10000001L));
        // typed getters over the result (binary rows with useServerPrepStmts=true)
        step("typed", () -> {
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT id, fee, days, user_id FROM travelrecord WHERE id IN (?, ?) ORDER BY id")) {
                ps.setLong(1, 1L);
                ps.setLong(2, 10000002L);
                StringBuilder sb = new StringBuilder();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        if (sb.length() > 0) sb.append(';');
                        sb.append(rs.getLong(1)).append('|').append(rs.getBigDecimal(2)).append('|')
                                .append(rs.getInt(3)).append('|').append(rs.getString(4));
                    }
                }
                return sb.toString();
            }
        });
        // one PreparedStatement executed again with other values (a re-EXECUTE of the same
        // server statement id when useServerPrepStmts=true), then a batch
        step("reuse", () -> {
            StringBuilder sb = new StringBuilder();
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT id, user_id FROM travelrecord WHERE id = ?")) {
                for (long k : new long[] {10000002L, 1L, 5000001L}) {
                    ps.setLong(1, k);
                    if (sb.length() > 0) sb.append(';');
                    sb.append(fmt(ps.executeQuery()));
                }
            }
            try (PreparedStatement ps = conn.prepareStatement(
                    "UPDATE travelrecord SET days = ? WHERE id = ?")) {
                long[] ids = {1L, 5000001L, 10000001L};
                for (int i = 0; i < ids.length; i++) {
                    ps.setInt(1, 100 + i);
                    ps.setLong(2, ids[i]);
                    ps.addBatch();
                }
                int n = 0;
                for (int c : ps.executeBatch()) n += c;
                sb.append("|batch=").append(n);
            }
            return sb + "|" + query("SELECT id, days FROM travelrecord WHERE days >= ? ORDER BY id", 100);
        });
        conn.close();
        System.out.println("done");
    }
}

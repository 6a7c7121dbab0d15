// Client-matrix script for Node mysql2 (tests/client_matrix.rs).
// usage: node check.js PORT query|execute
// `query` sends text queries (parameters interpolated by the client), `execute` uses server-side
// prepared statements (COM_STMT_PREPARE/EXECUTE, binary rows). Prints one `step=value` line per
// step, or `step=ERROR <code> <errno> <message>`, and goes on.
'use strict';
const mysql = require('mysql2/promise');

const port = Number(process.argv[2]);
const mode = process.argv[3];
const UNICODE = 'emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ';
const INS = 'INSERT INTO travelrecord (id, user_id, fee, days) VALUES (?, ?, ?, ?)';

function fmt(rows) {
  return rows
    .map((r) => Object.values(r).map((v) => (v === null ? 'NULL' : String(v))).join('|'))
    .join(';');
}

async function main() {
  let conn;
  const run = async (sql, params = []) => {
    const [res] = mode === 'execute' ? await conn.execute(sql, params) : await conn.query(sql, params);
    return res;
  };
  const step = async (name, fn) => {
    try {
      console.log(`${name}=${await fn()}`);
    } catch (e) {
      console.log(`${name}=ERROR ${e.code} ${e.errno} ${String(e.message).replace(/\n/g, ' ')}`);
      console.error(e);
    }
  };
  await step('connect', async () => {
    conn = await mysql.createConnection({
      host: '127.0.0.1',
      port,
      user: 'root',
      password: '123456',
      database: 'TESTDB',
    });
    return 'ok';
  });
  if (!conn) return;
  const count = async () => fmt(await run('SELECT COUNT(*) FROM travelrecord'));
  const user = async (k) => fmt(await run('SELECT user_id FROM travelrecord WHERE id = ?', [k]));
  await step('insert', async () => {
    let n = 0;
    for (const r of [
      [1, 'alice', '10.50', 1],
      [5000001, 'bob 中文', '20.25', 2],
      [10000001, 'carol 🐬', '30.00', 3],
      [10000002, 'dave', '40.00', 4],
    ]) {
      n += (await run(INS, r)).affectedRows;
    }
    return n;
  });
  await step('by_key', async () => {
    const a = await run('SELECT id, user_id, fee, days FROM travelrecord WHERE id = ?', [5000001]);
    const b = await run('SELECT id, user_id, fee, days FROM travelrecord WHERE id = ?', [10000001]);
    return fmt(a.concat(b));
  });
  await step('order_limit', async () => fmt(await run('SELECT id, user_id FROM travelrecord ORDER BY id DESC LIMIT ?', [3])));
  await step('aggregate', async () => fmt(await run('SELECT COUNT(*), SUM(fee), SUM(days) FROM travelrecord')));
  await step('tx_commit', async () => {
    await conn.beginTransaction();
    await run(INS, [2, 'tx', '1.00', 1]);
    await run(INS, [5000002, 'tx', '1.00', 1]);
    await conn.commit();
    return count();
  });
  await step('tx_rollback', async () => {
    await conn.beginTransaction();
    await run('INSERT INTO travelrecord (id, user_id) VALUES (?, ?)', [3, 'gone']);
    await run('INSERT INTO travelrecord (id, user_id) VALUES (?, ?)', [10000003, 'gone']);
    await run('UPDATE travelrecord SET user_id = ? WHERE id = ?', ['changed', 1]);
    const inside = `${await count()}|${await user(1)}`;
    await conn.rollback();
    return `${inside}|${await count()}|${await user(1)}`;
  });
  await step('unicode', async () => {
    await run('INSERT INTO travelrecord (id, user_id) VALUES (?, ?)', [5000007, UNICODE]);
    const got = await user(5000007);
    const len = fmt(await run('SELECT CHAR_LENGTH(user_id), LENGTH(user_id) FROM travelrecord WHERE id = ?', [5000007]));
    return `${got}|${got === UNICODE ? 'same' : 'DIFFERENT'}|${len}`;
  });
  await step('duplicate', async () => {
    try {
      await run('INSERT INTO travelrecord (id, user_id) VALUES (?, ?)', [10000001, 'dup']);
    } catch (e) {
      return `${e.code} ${e.errno}`;
    }
    return 'no error';
  });
  await step('after_error', async () => user(10000001));
  await conn.end();
  console.log('done');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

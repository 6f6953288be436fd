// The MariaDB hook's work, on kits/typescript: a database and a user per
// consumer, both named after it, the user allowed only its own database, its
// password the minted secret, checked by logging in as the consumer and
// using its database. src/mariadb.ts serves these handlers; the bench's
// driver (provide/benches/kit_typescript.mjs) calls them directly.
//
// Settings (environment; no secret in it):
//   MARIADB_HOOK_HOST                 the server (default 127.0.0.1)
//   MARIADB_HOOK_PORT                 its port (default 3306)
//   MARIADB_HOOK_ADMIN_USER           the account the hook acts as (default mesh-admin)
//   MARIADB_HOOK_ADMIN_PASSWORD_FILE  a file holding its password (required;
//                                     surrounding whitespace dropped; read again
//                                     at each new administrator connection with
//                                     the kit's readSecretFile, so a rotation
//                                     needs no restart)
//   MARIADB_HOOK_USER_HOST            the host part of the users it makes (default %)
//   MARIADB_HOOK_ADMIN_CONNECTIONS    administrator connections kept open (default 16)
//
// The administrator needs `ALL PRIVILEGES ON *.* WITH GRANT OPTION` (it
// makes users and databases, grants, locks, kills a retired user's
// connections). What the hook made is written down in its own database,
// `_mesh_provide` (a name no consumer can have: names start with [a-z0-9]),
// table `held`, each row with the provider instance that made it (column
// `provider`, `module@machine`: the request's `provider`): `held` lists only
// the asking instance's rows; retire, re-enable and delete leave any other
// be; ensure refuses a consumer another instance made (naming it) and a user
// or database of a consumer's name it did not make, never touching them. A
// row from before rows named their instance (`provider` NULL) is listed by
// none and adopted by the instance whose ensure asks for it. The instance
// is only ever compared with `=` and bound as a parameter (no LIKE, no
// GRANT), so `_` and `%` in it are plain characters.
//
// retire = ACCOUNT LOCK (and its connections killed), re-enable = ACCOUNT
// UNLOCK, delete = the user and the database dropped. The password is sent
// to MariaDB as its hash (IDENTIFIED BY PASSWORD '*...'), never in clear.

import { createHash, randomBytes } from 'node:crypto';
import {
  type Call,
  type Class,
  type Handlers,
  HookError,
  type ProviderFault,
  messageOf,
  readSecretFile,
} from 'mesh-hook-kit';
import { type Connection, type RowDataPacket, createConnection } from 'mysql2/promise';

/** The hook's settings, from the environment. */
export interface Settings {
  host: string;
  port: number;
  adminUser: string;
  adminPasswordFile: string;
  userHost: string;
  adminConnections: number;
}

/** Reads the settings; throws on a missing or bad one. */
export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const file = env.MARIADB_HOOK_ADMIN_PASSWORD_FILE ?? '';
  if (file === '') throw new Error('MARIADB_HOOK_ADMIN_PASSWORD_FILE is not set (the file holding the administrator password)');
  const port = Number(env.MARIADB_HOOK_PORT ?? '3306');
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`MARIADB_HOOK_PORT ${env.MARIADB_HOOK_PORT} is no port`);
  const connections = Number(env.MARIADB_HOOK_ADMIN_CONNECTIONS ?? '16');
  return {
    host: env.MARIADB_HOOK_HOST || '127.0.0.1',
    port,
    adminUser: env.MARIADB_HOOK_ADMIN_USER || 'mesh-admin',
    adminPasswordFile: file,
    userHost: env.MARIADB_HOOK_USER_HOST || '%',
    adminConnections: Number.isInteger(connections) && connections > 0 ? connections : 16,
  };
}

// A setting missing or bad is said in one line, exit 2 (mesh-provide quotes
// the hook's last stderr lines), not as a stack trace.
const settings = ((): Settings => {
  try {
    return readSettings(process.env);
  } catch (error) {
    process.stderr.write(`mariadb-hook: ${(error as Error).message}\n`);
    process.exit(2);
  }
})();
const where = `${settings.host}:${settings.port}`;

/** The hook's own database, and its table of what it made. */
const STATE = '`_mesh_provide`.`held`';

/** How long a connection may take to open at most, in milliseconds. */
const CONNECT_TIMEOUT = 5000;

/** mesh's rule for names (so one may go in SQL between backquotes as it is). */
const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function valid(name: string): string {
  if (!NAME.test(name)) throw new HookError('refused', `${JSON.stringify(name)} is no consumer name`);
  return name;
}

/**
 * The database of consumer `name`: its name, but for a name too long for
 * MariaDB once its `_` are escaped in a GRANT (over 64 characters: a 63-byte
 * name with two `_` or more), where each `_` is a `$` (no wildcard, and in
 * no consumer's name, so no other consumer's database can be named so).
 */
export function dbName(name: string): string {
  const escaped = valid(name).length + (name.match(/_/g)?.length ?? 0);
  return escaped <= 64 ? name : name.replace(/_/g, '$');
}

/** Consumer `name`'s database as an identifier. */
function ident(name: string): string {
  return `\`${dbName(name)}\``;
}

/** Consumer `name`'s database in a GRANT: `_` (and `%`) are wildcards there unless escaped (`a\_b`). */
function grantDb(name: string): string {
  return dbName(name).replace(/[_%]/g, '\\$&');
}

/** MariaDB's mysql_native_password hash: `*` and SHA1(SHA1(password)) in upper hex. */
export function nativeHash(password: string): string {
  const once = createHash('sha1').update(password, 'utf8').digest();
  return `*${createHash('sha1').update(once).digest('hex').toUpperCase()}`;
}

/** The variable naming the administrator's password file. */
const PASSWORD_VAR = 'MARIADB_HOOK_ADMIN_PASSWORD_FILE';

/** The administrator's password, read from its file now, announced before any use. */
function adminPassword(): Promise<string> {
  return readSecretFile(PASSWORD_VAR, { [PASSWORD_VAR]: settings.adminPasswordFile });
}

/**
 * The provider fault (the kit's Hook.adminFault): a new administrator
 * connection (the password file read again) refused, or MariaDB out of
 * reach; null when it logs in.
 */
export async function adminFault(call: Call): Promise<ProviderFault | null> {
  try {
    (await openAdmin(call)).destroy();
    return null;
  } catch (error) {
    const klass = error instanceof HookError ? error.class : (classify(error) ?? 'refused');
    const fix = klass === 'credentials-rejected' ? ` (write its password to the file ${PASSWORD_VAR} names)` : '';
    return { class: klass, error: messageOf(error) + fix };
  }
}

/** A MariaDB error's number and code, when it is one. */
function dbError(error: unknown): { errno?: number; code?: string; fatal?: boolean } {
  return typeof error === 'object' && error !== null ? (error as { errno?: number; code?: string; fatal?: boolean }) : {};
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT']);

/** The class of an error that is no HookError: the kit's `classify`. */
export function classify(error: unknown): Class | undefined {
  const { errno, code } = dbError(error);
  if (code !== undefined && UNREACHABLE.has(code)) return 'unreachable';
  if (errno === 1045 || errno === 4151) return 'credentials-rejected';
  return errno === undefined ? undefined : 'refused';
}

/** The connections to the administrator kept open (each opened with the password file read again). */
const idle: Connection[] = [];

async function openAdmin(call: Call): Promise<Connection> {
  const password = await adminPassword();
  try {
    const connection = await createConnection({
      host: settings.host,
      port: settings.port,
      user: settings.adminUser,
      password,
      connectTimeout: call.timeoutMs(CONNECT_TIMEOUT),
    });
    connection.on('error', () => {}); // a broken connection fails its next query, and is dropped then
    return connection;
  } catch (error) {
    const { errno } = dbError(error);
    if (errno === 1045) {
      throw new HookError('credentials-rejected', `the hook's administrator ${settings.adminUser} was refused: ${messageOf(error)}`);
    }
    if (classify(error) === 'unreachable') throw new HookError('unreachable', `cannot reach MariaDB at ${where}: ${messageOf(error)}`);
    throw error;
  }
}

/**
 * Runs `work` on an administrator connection (one kept open, else a new
 * one); a kept one found broken is replaced once.
 */
async function asAdmin<T>(call: Call, work: (sql: Sql) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    const kept = idle.pop();
    const connection = kept ?? (await openAdmin(call));
    const sql: Sql = async (text, values = []) => {
      const [rows] = await connection.query<RowDataPacket[]>({ sql: text, values, timeout: call.timeoutMs() });
      return rows;
    };
    try {
      await stateReady(sql);
      const done = await work(sql);
      if (idle.length < settings.adminConnections) idle.push(connection);
      else connection.destroy();
      return done;
    } catch (error) {
      const { fatal } = dbError(error);
      if (fatal) connection.destroy();
      else if (idle.length < settings.adminConnections) idle.push(connection);
      else connection.destroy();
      if (fatal && kept !== undefined && attempt === 0) continue;
      if (fatal && classify(error) === 'unreachable') throw new HookError('unreachable', `MariaDB at ${where}: ${messageOf(error)}`);
      throw error;
    }
  }
}

/** One query on a connection, its rows. */
type Sql = (text: string, values?: unknown[]) => Promise<RowDataPacket[]>;

let stateMade = false;

/** The hook's own database and table, made once a process. */
async function stateReady(sql: Sql): Promise<void> {
  if (stateMade) return;
  await sql('CREATE DATABASE IF NOT EXISTS `_mesh_provide`');
  await sql(
    `CREATE TABLE IF NOT EXISTS ${STATE} (
       consumer VARCHAR(64) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin NOT NULL PRIMARY KEY,
       user_host VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin NOT NULL,
       password_hash VARCHAR(64) NULL,
       made TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
       provider VARCHAR(130) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin NULL
     )`,
  );
  // A table from before instances: its rows' provider NULL (adopted by ensure).
  await sql(
    `ALTER TABLE ${STATE} ADD COLUMN IF NOT EXISTS provider VARCHAR(130) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin NULL`,
  );
  stateMade = true;
}

/** What MariaDB holds for a consumer's name. */
interface Found {
  /** Whether the hook wrote it down as its own, and its user's host then. */
  ours: boolean;
  /** The instance its row names (null: a row from before instances). */
  maker: string | null;
  userHost: string;
  /** The hash the hook last set (null: its first ensure did not finish). */
  setHash: string | null;
  userExists: boolean;
  /** The user's password hash at MariaDB. */
  auth: string | null;
  dbExists: boolean;
  granted: boolean;
}

async function find(sql: Sql, name: string): Promise<Found> {
  const [row] = await sql(
    `SELECT h.user_host AS user_host, h.password_hash AS set_hash, h.consumer IS NOT NULL AS ours, h.provider AS maker,
            (SELECT COUNT(*) FROM mysql.global_priv g WHERE g.User = ? AND g.Host = IFNULL(h.user_host, ?)) AS user_exists,
            (SELECT JSON_VALUE(g.Priv, '$.authentication_string') FROM mysql.global_priv g
              WHERE g.User = ? AND g.Host = IFNULL(h.user_host, ?)) AS auth,
            (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?) AS db_exists,
            (SELECT COUNT(*) FROM mysql.db d WHERE d.User = ? AND d.Host = IFNULL(h.user_host, ?) AND d.Db = ?) AS granted
       FROM (SELECT 1) one LEFT JOIN ${STATE} h ON h.consumer = ?`,
    [name, settings.userHost, name, settings.userHost, dbName(name), name, settings.userHost, grantDb(name), name],
  );
  return {
    ours: Number(row?.ours) === 1,
    maker: (row?.maker as string | null) ?? null,
    userHost: (row?.user_host as string | null) ?? settings.userHost,
    setHash: (row?.set_hash as string | null) ?? null,
    userExists: Number(row?.user_exists) > 0,
    auth: (row?.auth as string | null) ?? null,
    dbExists: Number(row?.db_exists) > 0,
    granted: Number(row?.granted) > 0,
  };
}

function notOurs(name: string): HookError {
  return new HookError(
    'refused',
    `a user or database named ${name} exists and was not made by this hook (not in ${STATE}): not touching it; ` +
      `drop it (DROP USER '${name}'@'${settings.userHost}'; DROP DATABASE \`${dbName(name)}\`) to let the hook make it`,
  );
}

/** Kills the connections of user `name` (a retired or deleted user's sessions end now). */
async function killSessions(sql: Sql, name: string): Promise<void> {
  const sessions = await sql('SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?', [name]);
  for (const session of sessions) {
    await sql('KILL CONNECTION ?', [Number(session.ID)]).catch(() => {}); // gone already
  }
}

/** Logs in as `user` with `password` (using `database` when given); the connection, or the error. */
async function login(call: Call, user: string, password: string, database?: string): Promise<Connection> {
  return createConnection({
    host: settings.host,
    port: settings.port,
    user,
    password,
    ...(database === undefined ? {} : { database }),
    connectTimeout: call.timeoutMs(CONNECT_TIMEOUT),
  });
}

/** Whether an error says the login (or the use of a database) was refused, rather than that MariaDB is away. */
function refusedLogin(error: unknown): boolean {
  const { errno } = dbError(error);
  return errno === 1045 || errno === 4151 || errno === 1044 || errno === 1049;
}

/** The same password as a person would set (the hash of random words). */
function someonesPassword(): string {
  return nativeHash(randomBytes(18).toString('base64'));
}

/** Makes what ensure makes; says what it brought back, if anything. */
async function ensure(sql: Sql, name: string, secret: string, provider: string): Promise<string | undefined> {
  const found = await find(sql, name);
  const user = [name, found.userHost];
  if (!found.ours) {
    if (found.userExists || found.dbExists) throw notOurs(name);
    // Written down first: a kill before the rest leaves a provision the next ensure finishes.
    await sql(`INSERT IGNORE INTO ${STATE} (consumer, user_host, provider) VALUES (?, ?, ?)`, [...user, provider]);
    const [row] = await sql(`SELECT provider FROM ${STATE} WHERE consumer = ?`, [name]);
    const maker = (row?.provider as string | null) ?? null;
    if (maker !== provider) throw madeBy(name, maker ?? 'an instance before instances were marked');
  } else if (found.maker === null) {
    // Written down before rows named their instance: adopted by the one listing it.
    await sql(`UPDATE ${STATE} SET provider = ? WHERE consumer = ? AND provider IS NULL`, [provider, name]);
  } else if (found.maker !== provider) {
    throw madeBy(name, found.maker);
  }
  const hash = nativeHash(secret);
  const complete = found.setHash !== null;
  const mended: string[] = [];
  if (!found.dbExists) await sql(`CREATE DATABASE IF NOT EXISTS ${ident(name)}`);
  if (!found.userExists) {
    await sql('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY PASSWORD ?', [...user, hash]);
  } else if (found.auth !== hash) {
    await sql('ALTER USER ?@? IDENTIFIED BY PASSWORD ?', [...user, hash]);
    // Mended whenever it set the password of a provision it had finished
    // making: the loop, which knows when it minted a new secret, does not
    // count a rotation (docs/hooks.md, "Rotations and mends").
    if (complete) mended.push(`the password of ${name} was not the minted secret; set`);
  }
  if (!found.granted || !found.userExists) {
    await sql(`GRANT ALL PRIVILEGES ON \`${grantDb(name)}\`.* TO ?@?`, user);
    if (complete && found.userExists) mended.push(`the grant of ${name} on its database was gone; granted again`);
  }
  if (found.setHash !== hash) await sql(`UPDATE ${STATE} SET password_hash = ? WHERE consumer = ?`, [hash, name]);
  return mended.length > 0 ? mended.join('; ') : undefined;
}

/** The refusal of an ensure of a consumer another instance made. */
function madeBy(name: string, maker: string): HookError {
  return new HookError('refused', `${name} was made by ${maker} (its row in ${STATE}): not touching it`);
}

/** The instance the call is made for (refused when none is said). */
function me(call: Call): string {
  if (call.provider === '') throw new HookError('refused', 'the request names no provider instance and MESH_PROVIDER is not set');
  return call.provider;
}

/**
 * The hook's row for `name` when `provider` made it: its user's host; null
 * when it made none, or another instance did, or it is from before instances
 * (refused when such a user or database exists without a row).
 */
async function oursOrNothing(sql: Sql, name: string, provider: string): Promise<string | null> {
  const found = await find(sql, name);
  if (found.ours) return found.maker === provider ? found.userHost : null;
  if (found.userExists || found.dbExists) throw notOurs(name);
  return null;
}

/** The handlers the hook serves. */
export const handlers: Handlers = {
  async hello() {
    await adminPassword(); // read and announced: redacted from here on
    return { name: 'mariadb', repairs: [] };
  },

  async ensure(request, call) {
    const name = valid(request.consumer.name);
    const provider = me(call);
    const mended = await asAdmin(call, (sql) => ensure(sql, name, request.secret, provider));
    return mended === undefined ? { ok: true } : { ok: true, mended };
  },

  async check(request, call) {
    const name = valid(request.consumer.name);
    let connection: Connection;
    try {
      connection = await login(call, name, request.secret, dbName(name));
    } catch (error) {
      const { errno } = dbError(error);
      if (errno === 1045) throw new HookError('credentials-rejected', `MariaDB refused ${name}'s login: ${messageOf(error)}`);
      if (errno === 4151) throw new HookError('credentials-rejected', `${name}'s account is locked (retired): ${messageOf(error)}`);
      if (errno === 1044 || errno === 1049) throw new HookError('refused', `${name} logged in but cannot use its database: ${messageOf(error)}`);
      if (classify(error) === 'unreachable') throw new HookError('unreachable', `cannot reach MariaDB at ${where}: ${messageOf(error)}`);
      throw error;
    }
    connection.destroy();
  },

  async held(_request, call) {
    const provider = me(call);
    const rows = await asAdmin(call, (sql) =>
      sql(
        `SELECT h.consumer AS consumer, IFNULL(JSON_VALUE(g.Priv, '$.account_locked'), 'false') AS locked
           FROM ${STATE} h LEFT JOIN mysql.global_priv g ON g.User = h.consumer AND g.Host = h.user_host
          WHERE h.provider = ?
          ORDER BY h.consumer`,
        [provider],
      ),
    );
    return { held: rows.map((row) => ({ consumer: String(row.consumer), retired: ['1', 'true'].includes(String(row.locked)) })) };
  },

  async retire(request, call) {
    const name = valid(request.consumer);
    const provider = me(call);
    await asAdmin(call, async (sql) => {
      const host = await oursOrNothing(sql, name, provider);
      if (host === null) return;
      await sql('ALTER USER IF EXISTS ?@? ACCOUNT LOCK', [name, host]);
      await killSessions(sql, name);
    });
  },

  async 're-enable'(request, call) {
    const name = valid(request.consumer);
    const provider = me(call);
    await asAdmin(call, async (sql) => {
      const host = await oursOrNothing(sql, name, provider);
      if (host !== null) await sql('ALTER USER IF EXISTS ?@? ACCOUNT UNLOCK', [name, host]);
    });
  },

  async delete(request, call) {
    const name = valid(request.consumer);
    const provider = me(call);
    await asAdmin(call, async (sql) => {
      const host = await oursOrNothing(sql, name, provider);
      if (host === null) return;
      // The user first, the row last: a kill half way leaves a row the next delete finishes.
      await sql('DROP USER IF EXISTS ?@?', [name, host]);
      await killSessions(sql, name);
      await sql(`DROP DATABASE IF EXISTS ${ident(name)}`);
      await sql(`DELETE FROM ${STATE} WHERE consumer = ?`, [name]);
    });
  },

  'by-hand': {
    async change(request, call) {
      const name = valid(request.consumer);
      await asAdmin(call, async (sql) => {
        const found = await find(sql, name);
        if (!found.userExists) throw new HookError('refused', `no user ${name} to change`);
        await sql('ALTER USER ?@? IDENTIFIED BY PASSWORD ?', [name, found.userHost, someonesPassword()]);
      });
    },

    async make(request, call) {
      const name = valid(request.consumer);
      await asAdmin(call, async (sql) => {
        if ((await find(sql, name)).ours) throw new HookError('refused', `${name} was made by this hook: by-hand make makes another's`);
        const user = [name, settings.userHost];
        await sql(`CREATE DATABASE IF NOT EXISTS ${ident(name)}`);
        await sql('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY PASSWORD ?', [...user, nativeHash(request.secret)]);
        await sql(`GRANT ALL PRIVILEGES ON \`${grantDb(name)}\`.* TO ?@?`, user);
      });
    },

    async works(request, call) {
      const name = valid(request.consumer);
      try {
        (await login(call, name, request.secret, dbName(name))).destroy();
        return { ok: true, works: true };
      } catch (error) {
        if (refusedLogin(error)) return { ok: true, works: false };
        throw error;
      }
    },

    async reach(request, call) {
      const name = valid(request.consumer);
      const target = valid(request.target);
      const connection = await login(call, name, request.secret);
      try {
        await connection.query({ sql: `USE ${ident(target)}`, timeout: call.timeoutMs() });
        return { ok: true, reaches: true };
      } catch (error) {
        if (refusedLogin(error)) return { ok: true, reaches: false };
        throw error;
      } finally {
        connection.destroy();
      }
    },

    async remove(request, call) {
      const name = valid(request.consumer);
      await asAdmin(call, async (sql) => {
        if ((await find(sql, name)).ours) throw new HookError('refused', `${name} was made by this hook: by-hand remove removes another's`);
        await sql('DROP USER IF EXISTS ?@?', [name, settings.userHost]);
        await sql(`DROP DATABASE IF EXISTS ${ident(name)}`);
      });
    },
  },
};

/** Closes the administrator connections kept open. */
export async function close(): Promise<void> {
  for (const connection of idle.splice(0)) connection.destroy();
}

#!/usr/bin/env node
// A mesh-provide hook in node (serve mode; exec mode works too): a Redis ACL
// user per consumer through node-redis (@redis/client), allowed the keys
// `<consumer>:*`, its password the minted secret, checked by logging in as
// the consumer. It keeps the same users as redis-acl.sh and redis-acl.py:
// one may replace another on the same server. Plain JavaScript on the
// TypeScript kit (mesh-hook-kit, kits/typescript), whose serve() speaks the
// protocol: the handlers below, one a verb, each given its request and its
// call (the deadline, the provider instance).
//
//   mesh-provide --hook examples/hooks/redis-acl.mjs --hook-mode serve ...
//
// Settings (environment, which mesh-provide passes on but for its own MESH_*
// variables; no secret in it):
//   REDIS_ACL_HOST                 the Redis server (default 127.0.0.1)
//   REDIS_ACL_PORT                 its port (default 6379)
//   REDIS_ACL_ADMIN_USER           the ACL user the hook acts as (default mesh-admin)
//   REDIS_ACL_ADMIN_PASSWORD_FILE  a file holding that user's password (required)
//
// What it made carries the key pattern `%R~_mesh-provide:<module>@<machine>`
// (read-only, on a key no consumer's pattern can match: names never start
// with `_`), its mark, naming the provider instance the request is made for
// (its `provider`): `held` lists only users with the asking instance's mark;
// retire, re-enable and delete leave any other user be; `ensure` refuses a
// user another instance made (naming it) and a user without a mark, never
// touching them, and adopts one marked `%R~_mesh-provide` alone (before
// marks named their instance), setting its instance's mark. Retire = `off` (and its connections closed),
// re-enable = `on`, delete = its keys `<consumer>:*` and the user go.
// `by-hand` (conform's oracle) acts as a person at redis-cli would: change
// sets another password, make makes an unmarked user, works and reach log in
// as the user, remove deletes what make made.
//
// The administrator's password file is read again at each new connection
// of the administrator (node-redis asks its credentials provider at every
// connect and reconnect), and a changed password is announced (a secrets
// line) before it is used: a rotation needs no restart. Every wait is
// bounded by the call's deadline (`deadline_ms`, the kit's
// call.timeoutMs()): a command's timeout, the connect's (5 s at most).
//
// Install it once: the kit built (`npm ci && npm run build` in
// kits/typescript), then `npm ci` in this folder, which links the kit
// (package.json: "mesh-hook-kit": "file:../../kits/typescript") beside
// @redis/client; `bash -c '. scripts/lib.sh; ensure_node_hooks'` does both.

import { createHash, randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import { RedisClient } from '@redis/client';

import { HookError, log, readSecretFile, serve } from 'mesh-hook-kit';

/** The variable naming the file that holds the administrator's password. */
const PASSWORD_VAR = 'REDIS_ACL_ADMIN_PASSWORD_FILE';

/** The mark of the users this hook made, among their key patterns. */
const MARK = '%R~_mesh-provide';

/** How long a connection may take to open, in milliseconds. */
const CONNECT_TIMEOUT = 5000;

const settings = await readSettings(process.env);

// One client class for every connection: createClient() builds the class
// (every command attached) anew for each options object, ~17 ms of CPU a
// client, which a check per consumer cannot afford.
const newClient = RedisClient.factory({});

const admin = newClient({
  socket: {
    ...settings.socket,
    // Reconnect soon, then every 2 s at most: a call while it is away fails
    // at once (no queue) and the loop retries on its next pass.
    reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, 2000),
  },
  // Asked at every connect and reconnect: the file read again, and a new
  // password announced before it is sent.
  credentialsProvider: {
    type: 'async-credentials-provider',
    credentials: async () => ({ username: settings.adminUser, password: await adminPassword() }),
  },
  RESP: 3,
  disableOfflineQueue: true,
  disableClientInfo: true,
});
let lastAdminError = '';
/** Why the password file could not be read at the last connect ('' when it could). */
let passwordError = '';

/** The administrator's password, the file read again (readSecretFile); announced before anything uses it. */
async function adminPassword() {
  try {
    const password = await readSecretFile(PASSWORD_VAR, { [PASSWORD_VAR]: settings.passwordFile });
    passwordError = '';
    return password;
  } catch (error) {
    passwordError = error.message;
    throw error;
  }
}

admin.on('error', (error) => {
  // Said once per new error, not once per reconnection.
  if (error.message !== lastAdminError) {
    lastAdminError = error.message;
    log(`the administrator's connection to ${settings.where}: ${error.message}`);
  }
});
admin.on('ready', () => {
  if (lastAdminError !== '') log(`the administrator's connection to ${settings.where} is back`);
  lastAdminError = '';
});
admin.connect().catch((error) => log(`cannot connect to ${settings.where}: ${error.message}`));

/** What the calls waiting for the administrator's first connection wait on. */
let firstReady = null;

/**
 * The administrator's client once it is connected. A call made while it
 * makes its first connection waits for it (up to the connect timeout); a
 * call made while it is away fails at once with the reason, and the client
 * keeps reconnecting (the loop calls again on its next pass).
 */
async function connected(call) {
  if (admin.isReady) return admin;
  const wait = call.timeoutMs(CONNECT_TIMEOUT);
  if (lastAdminError === '') {
    firstReady ??= new Promise((resolve) => admin.once('ready', resolve));
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, wait);
    });
    await Promise.race([firstReady, late]).finally(() => clearTimeout(timer));
    if (admin.isReady) return admin;
  }
  if (passwordError !== '') throw new HookError('secret-unreadable', passwordError);
  const why = lastAdminError === '' ? `no answer within ${wait} ms` : lastAdminError;
  if (/^(WRONGPASS|NOAUTH)\b/.test(why)) {
    throw new HookError('credentials-rejected', `the hook's administrator ${settings.adminUser} was refused: ${why}`);
  }
  throw new HookError('unreachable', `cannot reach Redis at ${settings.where}: ${why}`);
}

/** `args` sent as the administrator, bounded by the call's deadline. */
async function send(call, args) {
  await connected(call);
  return admin.sendCommand(args, { timeout: call.timeoutMs() });
}

/** The mark of what the instance `instance` (module@machine) makes. */
function markOf(instance) {
  return `${MARK}:${instance}`;
}

/** The provider instance the call is made for (refused when none is said). */
function me(call) {
  if (!call.provider) throw new HookError('refused', 'the request names no provider instance and MESH_PROVIDER is not set');
  return call.provider;
}

/** The ACL rules of a consumer's user made by `instance`, but for on/off and its password. */
function rules(name, instance) {
  return ['resetkeys', `~${name}:*`, markOf(instance), 'resetchannels', 'nocommands', '+@all', '-@dangerous'];
}

/** How Redis lists rules with `mark` back in ACL GETUSER (compared by ensure). */
function listed(name, mark) {
  return { keys: `~${name}:* ${mark}`, channels: '', commands: '+@all -@dangerous' };
}

/**
 * The instance ACL GETUSER's `keys` mark the user made by: '' for a mark from
 * before instances (MARK alone), null when it carries none.
 */
function makerOf(words) {
  for (const word of String(words).split(' ')) {
    if (word === MARK) return '';
    if (word.startsWith(`${MARK}:`)) return word.slice(MARK.length + 1);
  }
  return null;
}

/** SHA-256 in hex: how Redis lists a password. */
function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The user `name` as ACL GETUSER says it (null: no such user), refused when mesh did not make it. */
async function ours(name, call, onlyOurs = true) {
  // In RESP3 (what both clients here speak) ACL GETUSER answers a map,
  // which node-redis gives as an object.
  const user = await send(call, ['ACL', 'GETUSER', name]);
  if (onlyOurs && user !== null && makerOf(user.keys) === null) {
    throw new HookError(
      'refused',
      `user ${name} exists and was not made by this hook (no ${MARK}): not touching it; remove it (ACL DELUSER ${name}) to let the hook make it`,
    );
  }
  return user;
}

/** The user `name` when the asking instance made it; null for none, another instance's or one marked before instances. */
async function mine(name, call) {
  const user = await ours(name, call);
  return user !== null && makerOf(user.keys) === me(call) ? user : null;
}

/** The handlers the hook serves, one a verb (the kit answers any other verb unsupported). */
const handlers = {
  /**
   * Makes the user if missing, and brings back its password and rules when
   * they differ (a rotated secret, or a change by hand). Never turns it on
   * or off (retire and re-enable do).
   */
  async ensure({ consumer, secret }, call) {
    const name = consumer.name;
    const instance = me(call);
    const user = await ours(name, call);
    const hash = sha256(secret);
    if (user === null) {
      await send(call, ['ACL', 'SETUSER', name, 'reset', 'on', `>${secret}`, ...rules(name, instance)]);
      log(`made the user ${name}`);
      return undefined;
    }
    const maker = makerOf(user.keys);
    if (maker && maker !== instance) {
      throw new HookError('refused', `user ${name} was made by ${maker} (its mark ${markOf(maker)}): not touching it`);
    }
    // A mark from before instances (maker ''): adopted, its rules compared as they were.
    const adopting = maker === '';
    const want = listed(name, adopting ? MARK : markOf(instance));
    const passwords = (user.passwords ?? []).map(String);
    const samePassword = passwords.length === 1 && passwords[0] === hash;
    const sameRules =
      String(user.keys) === want.keys && String(user.channels) === want.channels && String(user.commands) === want.commands;
    if (samePassword && sameRules && !adopting) return undefined;
    await send(call, ['ACL', 'SETUSER', name, 'resetpass', `>${secret}`, ...rules(name, instance)]);
    if (adopting) log(`adopted the user ${name} (marked before instances) for ${instance}`);
    // Mended whenever it set the password or the rules: the loop, which
    // knows when it minted a new secret, does not count a rotation.
    const byHand = [];
    if (!samePassword) byHand.push('its password');
    if (!sameRules) byHand.push('its rules');
    if (byHand.length === 0) return undefined; // adopted, nothing else changed: not a mend
    const words = `brought ${byHand.join(' and ')} of user ${name} to what the mesh asks`;
    log(words);
    return { ok: true, mended: words };
  },

  /** Logs in as the consumer on a connection of its own, and reads a key of its own. */
  async check({ consumer, secret }, call) {
    const name = consumer.name;
    await asUser(name, secret, call, (run) => run(['EXISTS', `${name}:mesh-check`]));
  },

  /** The users mesh made (marked), each retired when it is `off`. */
  async held(_request, call) {
    const mark = markOf(me(call));
    const lines = await send(call, ['ACL', 'LIST']);
    const held = [];
    for (const line of lines.map(String)) {
      // `user NAME on|off RULES...`
      const words = line.split(' ');
      if (words[0] === 'user' && words.includes(mark)) {
        held.push({ consumer: words[1], retired: words[2] === 'off' });
      }
    }
    return { held };
  },

  /** `off`, and its connections closed. */
  async retire({ consumer: name }, call) {
    if ((await mine(name, call)) === null) return;
    await send(call, ['ACL', 'SETUSER', name, 'off']);
    await send(call, ['CLIENT', 'KILL', 'USER', name]).catch(() => {});
  },

  async 're-enable'({ consumer: name }, call) {
    const user = await ours(name, call);
    if (user === null) {
      throw new HookError('refused', `the Redis user ${name} is missing: nothing to enable`);
    }
    if (makerOf(user.keys) !== me(call)) return;
    await send(call, ['ACL', 'SETUSER', name, 'on']);
  },

  /** Its keys `<name>:*`, then the user. */
  async delete({ consumer: name }, call) {
    if ((await mine(name, call)) === null) return;
    await deleteUser(name, call);
    log(`deleted the user ${name} and its keys`);
  },

  /** Re-reads the password file: hello's secrets are the current ones. */
  async hello() {
    await adminPassword();
    return { repairs: [] };
  },

  /** As a person at redis-cli would (conform's oracle; the loop never calls it), one handler an action. */
  'by-hand': {
    async change({ consumer: name }, call) {
      if ((await ours(name, call, false)) === null) {
        throw new HookError('refused', `by hand: there is no user ${name} to change`);
      }
      await send(call, ['ACL', 'SETUSER', name, 'resetpass', `>${randomBytes(16).toString('hex')}`]);
    },
    async make({ consumer: name, secret }, call) {
      await send(call, ['ACL', 'SETUSER', name, 'reset', 'on', `>${secret}`, `~${name}:*`, '+@all', '-@dangerous']);
    },
    async remove({ consumer: name }, call) {
      if ((await ours(name, call, false)) !== null) await deleteUser(name, call);
    },
    async works({ consumer: name, secret }, call) {
      try {
        await asUser(name, secret, call, (run) => run(['EXISTS', `${name}:mesh-check`]));
        return { ok: true, works: true };
      } catch (error) {
        if (classify(error) === 'credentials-rejected' || /^NOPERM\b/.test(String(error?.message))) {
          return { ok: true, works: false };
        }
        throw error;
      }
    },
    async reach({ consumer: name, secret, target }, call) {
      const reaches = await asUser(name, secret, call, async (run) => {
        const denied = (error) => {
          if (/^NOPERM\b/.test(String(error?.message))) return false;
          throw error;
        };
        const read = await run(['EXISTS', `${target}:mesh-check`]).then(() => true, denied);
        const wrote = await run(['SET', `${target}:mesh-reach`, '1']).then(() => true, denied);
        if (wrote) await run(['DEL', `${target}:mesh-reach`]);
        return read || wrote;
      });
      return { ok: true, reaches };
    },
  },
};

/** Its keys `<name>:*`, then the user. */
async function deleteUser(name, call) {
  let cursor = '0';
  do {
    const [next, keys] = await send(call, ['SCAN', cursor, 'MATCH', `${name}:*`, 'COUNT', '1000']);
    cursor = String(next);
    if (keys.length > 0) await send(call, ['UNLINK', ...keys.map(String)]);
  } while (cursor !== '0');
  await send(call, ['ACL', 'DELUSER', name]);
}

/**
 * `work(run)` on a connection of its own logged in as `name` with `secret`
 * (`HELLO 3 AUTH`), `run(args)` sending a command; every wait bounded by
 * the call's deadline.
 */
async function asUser(name, secret, call, work) {
  const client = newClient({
    socket: { ...settings.socket, connectTimeout: call.timeoutMs(CONNECT_TIMEOUT), reconnectStrategy: false },
    username: name,
    password: secret,
    RESP: 3,
    disableOfflineQueue: true,
    disableClientInfo: true,
  });
  client.on('error', () => {}); // the failure is the connect's or the command's
  try {
    await client.connect();
    return await work((args) => client.sendCommand(args, { timeout: call.timeoutMs() }));
  } finally {
    client.destroy();
  }
}

/** Redis's own words decide: WRONGPASS and NOAUTH are refused credentials; a socket that fails is unreachable. */
function classify(error) {
  const words = String(error?.message ?? '');
  if (/^(WRONGPASS|NOAUTH)\b/.test(words)) return 'credentials-rejected';
  if (
    error?.code === 'ECONNREFUSED' ||
    error?.code === 'ECONNRESET' ||
    error?.code === 'EHOSTUNREACH' ||
    error?.name === 'TimeoutError' ||
    error?.constructor?.name === 'TimeoutError' ||
    error?.constructor?.name === 'ConnectionTimeoutError' ||
    /^(The client is (offline|closed)|Connection timeout|Socket closed unexpectedly|Timeout)/.test(words)
  ) {
    return 'unreachable';
  }
  return 'refused';
}

/** The settings from the environment; exits 2 naming what is wrong. */
async function readSettings(env) {
  const fail = (words) => {
    log(words);
    process.exit(2);
  };
  const host = env.REDIS_ACL_HOST || '127.0.0.1';
  const port = Number(env.REDIS_ACL_PORT || 6379);
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`REDIS_ACL_PORT is not a port: ${env.REDIS_ACL_PORT}`);
  const file = env[PASSWORD_VAR];
  if (!file) fail(`${PASSWORD_VAR} is not set`);
  // Read once at start so that a hook that cannot read it says so at once
  // (and announces it: serve mode's first line); read again at every
  // connection of the administrator.
  await readSecretFile(PASSWORD_VAR, { [PASSWORD_VAR]: file }).catch((error) => fail(error.message));
  return {
    where: `${host}:${port}`,
    socket: { host, port, connectTimeout: CONNECT_TIMEOUT },
    adminUser: env.REDIS_ACL_ADMIN_USER || 'mesh-admin',
    passwordFile: file,
  };
}

/**
 * Closes the administrator's connection: at once when it is not connected
 * (a connect that hangs must not keep an exec-mode process alive after its
 * reply), else after its last replies, 500 ms at most.
 */
export const close = async () => {
  if (!admin.isReady) {
    admin.destroy();
    return;
  }
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, 500);
  });
  await Promise.race([admin.close().catch(() => {}), late]).finally(() => clearTimeout(timer));
  if (admin.isOpen) admin.destroy();
};

// The handlers, for a program measuring them without the boundary (the
// benchmark's benches/hook_direct.mjs, with the kit's callOf); run as a
// program, the hook answers.
export { handlers };
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  await serve({ name: 'redis-acl.mjs', handlers, classify, close });
}

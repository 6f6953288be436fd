#!/usr/bin/env node
// A mesh-provide hook in node (serve mode; exec mode works too): a Redis ACL
// user per consumer through node-redis (@redis/client), allowed the keys
// `<consumer>:*`, its password the minted secret, checked by logging in as
// the consumer. It keeps the same users as redis-acl.sh and redis-acl.py:
// one may replace another on the same server.
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
// What it made carries the key pattern `%R~_mesh-provide` (read-only, on a
// key no consumer's pattern can match: names never start with `_`), its
// mark: `held` lists only users with it, and a user of that name without it
// is refused, never touched. Retire = `off` (and its connections closed),
// re-enable = `on`, delete = its keys `<consumer>:*` and the user go.
//
// Install its dependency once: `npm ci` in this folder (scripts/lib.sh does).

import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import { RedisClient } from '@redis/client';

import { HookError, log, runHook } from './mesh-hook.mjs';

/** The mark of the users this hook made, among their key patterns. */
const MARK = '%R~_mesh-provide';

/** How long a connection may take to open, in milliseconds. */
const CONNECT_TIMEOUT = 5000;

const settings = readSettings(process.env);

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
  username: settings.adminUser,
  password: settings.adminPassword,
  RESP: 3,
  disableOfflineQueue: true,
  disableClientInfo: true,
});
let lastAdminError = '';
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
async function connected() {
  if (admin.isReady) return admin;
  if (lastAdminError === '') {
    firstReady ??= new Promise((resolve) => admin.once('ready', resolve));
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, CONNECT_TIMEOUT);
    });
    await Promise.race([firstReady, late]).finally(() => clearTimeout(timer));
    if (admin.isReady) return admin;
  }
  const why = lastAdminError === '' ? `no answer within ${CONNECT_TIMEOUT} ms` : lastAdminError;
  if (/^(WRONGPASS|NOAUTH)\b/.test(why)) {
    throw new HookError('credentials-rejected', `the hook's administrator ${settings.adminUser} was refused: ${why}`);
  }
  throw new HookError('unreachable', `cannot reach Redis at ${settings.where}: ${why}`);
}

/** The ACL rules of a consumer's user, but for on/off and its password. */
function rules(name) {
  return ['resetkeys', `~${name}:*`, MARK, 'resetchannels', 'nocommands', '+@all', '-@dangerous'];
}

/** How Redis lists those rules back in ACL GETUSER (compared by ensure). */
function listed(name) {
  return { keys: `~${name}:* ${MARK}`, channels: '', commands: '+@all -@dangerous' };
}

/** Whether ACL GETUSER's `keys` (or ACL LIST's words) carry the mark. */
function marked(words) {
  return String(words).split(' ').includes(MARK);
}

/** The SHA-256 of the secret this process last set or found for each user. */
const set = new Map();

/** SHA-256 in hex: how Redis lists a password. */
function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The user `name` as ACL GETUSER says it (null: no such user), refused when mesh did not make it. */
async function ours(name) {
  await connected();
  // In RESP3 (what both clients here speak) ACL GETUSER answers a map,
  // which node-redis gives as an object.
  const user = await admin.sendCommand(['ACL', 'GETUSER', name]);
  if (user !== null && !marked(user.keys)) {
    throw new HookError(
      'refused',
      `user ${name} exists and was not made by this hook (no ${MARK}): not touching it; remove it (ACL DELUSER ${name}) to let the hook make it`,
    );
  }
  return user;
}

const verbs = {
  /**
   * Makes the user if missing, and brings back its password and rules when
   * they differ (a rotated secret, or a change by hand). Never turns it on
   * or off (retire and re-enable do).
   */
  async ensure(consumer, secret) {
    const name = consumer.name;
    const user = await ours(name);
    const hash = sha256(secret);
    if (user === null) {
      await admin.sendCommand(['ACL', 'SETUSER', name, 'reset', 'on', `>${secret}`, ...rules(name)]);
      set.set(name, hash);
      log(`made the user ${name}`);
      return undefined;
    }
    const want = listed(name);
    const passwords = (user.passwords ?? []).map(String);
    const samePassword = passwords.length === 1 && passwords[0] === hash;
    const sameRules =
      String(user.keys) === want.keys && String(user.channels) === want.channels && String(user.commands) === want.commands;
    if (samePassword && sameRules) {
      set.set(name, hash);
      return undefined;
    }
    await admin.sendCommand(['ACL', 'SETUSER', name, 'resetpass', `>${secret}`, ...rules(name)]);
    // A secret this process set before, no longer at Redis: changed by hand.
    // A secret it has not set (a rotation, or its first call since it
    // started) is no news.
    const byHand = [];
    if (!samePassword && set.get(name) === hash) byHand.push('its password');
    if (!sameRules) byHand.push('its rules');
    set.set(name, hash);
    if (byHand.length === 0) {
      log(`gave the user ${name} its new secret`);
      return undefined;
    }
    const words = `brought ${byHand.join(' and ')} of user ${name}, changed at Redis, to what the mesh asks`;
    log(words);
    return { mended: words };
  },

  /** Logs in as the consumer on a connection of its own, and reads a key of its own. */
  async check(consumer, secret) {
    const name = consumer.name;
    const client = newClient({
      socket: { ...settings.socket, reconnectStrategy: false },
      username: name,
      password: secret,
      RESP: 3,
      disableOfflineQueue: true,
      disableClientInfo: true,
    });
    client.on('error', () => {}); // the failure is the connect's or the command's
    try {
      await client.connect();
      await client.sendCommand(['EXISTS', `${name}:mesh-check`]);
    } finally {
      client.destroy();
    }
  },

  /** The users mesh made (marked), each retired when it is `off`. */
  async held() {
    await connected();
    const lines = await admin.sendCommand(['ACL', 'LIST']);
    const held = [];
    for (const line of lines.map(String)) {
      // `user NAME on|off RULES...`
      const words = line.split(' ');
      if (words[0] === 'user' && words.includes(MARK)) {
        held.push({ consumer: words[1], retired: words[2] === 'off' });
      }
    }
    return held;
  },

  /** `off`, and its connections closed. */
  async retire(name) {
    if ((await ours(name)) === null) return;
    await admin.sendCommand(['ACL', 'SETUSER', name, 'off']);
    await admin.sendCommand(['CLIENT', 'KILL', 'USER', name]).catch(() => {});
  },

  async 're-enable'(name) {
    if ((await ours(name)) === null) {
      throw new HookError('refused', `the Redis user ${name} is missing: nothing to enable`);
    }
    await admin.sendCommand(['ACL', 'SETUSER', name, 'on']);
  },

  /** Its keys `<name>:*`, then the user. */
  async delete(name) {
    if ((await ours(name)) === null) return;
    let cursor = '0';
    do {
      const [next, keys] = await admin.sendCommand(['SCAN', cursor, 'MATCH', `${name}:*`, 'COUNT', '1000']);
      cursor = String(next);
      if (keys.length > 0) await admin.sendCommand(['UNLINK', ...keys.map(String)]);
    } while (cursor !== '0');
    await admin.sendCommand(['ACL', 'DELUSER', name]);
    set.delete(name);
    log(`deleted the user ${name} and its keys`);
  },
};

/** Redis's own words decide: WRONGPASS and NOAUTH are refused credentials; a socket that fails is unreachable. */
function classify(error) {
  const words = String(error?.message ?? '');
  if (/^(WRONGPASS|NOAUTH)\b/.test(words)) return 'credentials-rejected';
  if (
    error?.code === 'ECONNREFUSED' ||
    error?.code === 'ECONNRESET' ||
    error?.code === 'EHOSTUNREACH' ||
    /^(The client is (offline|closed)|Connection timeout|Socket closed unexpectedly)/.test(words)
  ) {
    return 'unreachable';
  }
  return 'refused';
}

/** The settings from the environment; exits 2 naming what is wrong. */
function readSettings(env) {
  const fail = (words) => {
    log(words);
    process.exit(2);
  };
  const host = env.REDIS_ACL_HOST || '127.0.0.1';
  const port = Number(env.REDIS_ACL_PORT || 6379);
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`REDIS_ACL_PORT is not a port: ${env.REDIS_ACL_PORT}`);
  const file = env.REDIS_ACL_ADMIN_PASSWORD_FILE;
  if (!file) fail('REDIS_ACL_ADMIN_PASSWORD_FILE is not set');
  let adminPassword;
  try {
    adminPassword = readFileSync(file, 'utf8').replace(/[\r\n]/g, '');
  } catch (error) {
    fail(`the admin password file ${file} cannot be read (${error.code ?? error.message})`);
  }
  if (adminPassword === '') fail(`the admin password file ${file} is empty`);
  return {
    where: `${host}:${port}`,
    socket: { host, port, connectTimeout: CONNECT_TIMEOUT },
    adminUser: env.REDIS_ACL_ADMIN_USER || 'mesh-admin',
    adminPassword,
  };
}

/** Closes the administrator's connection. */
export const close = () => admin.close().catch(() => {});

// The verbs, for a program measuring them without the boundary (the
// benchmark's benches/hook_direct.mjs); run as a program, the hook answers.
export { verbs };
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  await runHook({
    name: 'redis-acl.mjs',
    secrets: [settings.adminPassword],
    verbs,
    classify,
    close,
  });
}

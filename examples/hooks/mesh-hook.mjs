// The hook side of mesh-provide's protocol (v 1) for node, in both modes:
//
//   hook serve    one JSON request a line on stdin, one JSON reply a line on
//                 stdout carrying the request's id; several requests in flight
//   hook VERB     exec mode: one JSON request on stdin, one JSON reply on
//                 stdout, exit 0 on success and 1 on failure
//
// A hook module gives runHook() its verbs; each verb returns (or resolves)
// on success and throws on failure, and is given the call's deadline (the
// request's `deadline_ms`). stdout carries replies only: log with log()
// (stderr). The consumer's secret arrives in the request on stdin and is
// never logged; it and the hook's own secrets (announceSecrets) are cut out
// of any error text before a reply and of every log() line. Types for a
// TypeScript hook: mesh-hook.d.ts. docs/hooks.md describes the protocol.

import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** The protocol version this module speaks. */
export const VERSION = 1;

/** The four classes a failure may name. */
export const CLASSES = ['credentials-rejected', 'unreachable', 'secret-unreadable', 'refused'];

/** The by-hand actions of `mesh-provide conform`. */
export const BY_HAND_ACTIONS = ['change', 'make', 'works', 'reach', 'remove'];

/** A call's bound when the request says none and MESH_HOOK_TIMEOUT_MS is not set: 30 s. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** A failure with its class: `throw new HookError('refused', 'words')`. */
export class HookError extends Error {
  constructor(klass, message) {
    super(message);
    this.class = CLASSES.includes(klass) ? klass : 'refused';
  }
}

/** When mesh-provide stops waiting for a call's reply. */
export class Deadline {
  /** `ms` from now. */
  constructor(ms) {
    this.at = performance.now() + ms;
  }

  /** Milliseconds left (0 once it has passed). */
  remaining() {
    return Math.max(0, this.at - performance.now());
  }

  /** Whether it has passed. */
  expired() {
    return this.remaining() <= 0;
  }

  /** Milliseconds a wait may take: what is left, at most `cap`, at least 1. */
  timeout(cap = Infinity) {
    return Math.max(1, Math.floor(Math.min(this.remaining(), cap)));
  }
}

/** The deadline of `request`: its `deadline_ms`, else MESH_HOOK_TIMEOUT_MS, else 30 s. */
export function deadlineOf(request) {
  const given = request?.deadline_ms;
  if (Number.isFinite(given) && given >= 0) return new Deadline(given);
  const env = Number(process.env.MESH_HOOK_TIMEOUT_MS);
  return new Deadline(Number.isFinite(env) && env > 0 ? env : DEFAULT_TIMEOUT_MS);
}

let logName = 'hook';
let serving = false;
/** The hook's own secrets, as last announced. */
let hookSecrets = [];
/** Exec mode: the secrets announced during the call, said in its reply. */
let announcedInExec = null;
/** The secret of the request being answered (for log()). */
const requestSecret = new AsyncLocalStorage();
const requestProvider = new AsyncLocalStorage();

/**
 * The provider instance (`module@machine`) the request being answered is
 * made for: its `provider`, else MESH_PROVIDER (the instance the hook was
 * started for), else ''. In serve mode one process may be asked for more
 * than one instance: act on this, not on MESH_PROVIDER.
 */
export function provider() {
  return requestProvider.getStore() || process.env.MESH_PROVIDER || '';
}

/** `words` with the hook's secrets, the current request's secret and `extra` replaced by [redacted]. */
export function redact(words, extra = []) {
  const hidden = [...extra, requestSecret.getStore(), ...hookSecrets].filter((s) => typeof s === 'string' && s !== '');
  let text = String(words);
  for (const secret of [...new Set(hidden)].sort((a, b) => b.length - a.length)) {
    text = text.split(secret).join('[redacted]');
  }
  return text;
}

/** One line on stderr, which mesh-provide logs (redacted, bounded); secrets the kit knows are cut out. */
export function log(words) {
  process.stderr.write(`${logName}: ${redact(words).replace(/[\r\n]+/g, ' ')}\n`);
}

/**
 * Says the hook's own secrets (its administrator's password): the set
 * mesh-provide redacts is replaced by it. Call it BEFORE anything that may
 * write one. In serve mode it writes the line `{"secrets":[...]}` at once
 * (stdout is synchronous for a pipe on Linux); in exec mode the set goes in
 * the call's reply. The same set as the last one writes nothing again.
 */
export function announceSecrets(secrets) {
  const fresh = secrets.map(String).filter((s) => s !== '');
  const same = fresh.length === hookSecrets.length && fresh.every((s, i) => s === hookSecrets[i]);
  if (same && (serving || announcedInExec !== null)) return;
  hookSecrets = fresh;
  if (serving) {
    process.stdout.write(`${JSON.stringify({ secrets: fresh })}\n`);
  } else {
    announcedInExec = [...fresh];
  }
}

/** What readSecretFile read last, by variable: announced together. */
const fileSecrets = new Map();

/**
 * A secret of the hook's own (its administrator's password), read from the
 * file the environment variable `envVar` names (in `env`, by default
 * process.env): the file read again at every call, its surrounding
 * whitespace (the line break) trimmed, and the secret announced
 * (announceSecrets, with every other secret read through this function)
 * BEFORE it is returned. Call it for every new administrator session (a
 * connection): a rotated password then needs no restart. Throws
 * HookError('secret-unreadable'), naming the variable and the file (never
 * what it holds), when `envVar` is not set, the file cannot be read or it
 * holds only whitespace.
 */
export function readSecretFile(envVar, env = process.env) {
  const path = env[envVar] ?? '';
  if (path === '') {
    throw new HookError('secret-unreadable', `${envVar} is not set: it names the file holding the hook's administrator password`);
  }
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new HookError('secret-unreadable', `the secret file ${path} (${envVar}) cannot be read: ${error.code ?? error.message}`);
  }
  const secret = text.trim();
  if (secret === '') throw new HookError('secret-unreadable', `the secret file ${path} (${envVar}) is empty`);
  fileSecrets.set(envVar, secret);
  announceSecrets([...new Set(fileSecrets.values())].sort());
  return secret;
}

/**
 * Answers requests with `verbs` until stdin closes (serve) or after the one
 * request (exec), then calls `close` and ends the process.
 *
 * - `name`: the hook's name, said in hello and used in its log lines;
 * - `secrets`: the hook's own secrets known at start (announced);
 * - `verbs`: { ensure(consumer, secret, deadline), check(consumer, secret,
 *   deadline) (either may resolve to { mended: 'words' }: what it found
 *   changed by hand and brought back), held(deadline) -> [{consumer,
 *   retired}], retire(name, deadline), 're-enable'(name, deadline),
 *   delete(name, deadline), probe(fault, deadline), repair(fault, deadline)
 *   -> 'detail', hello(deadline) (announce secrets there), byHand({action,
 *   consumer, secret, target}, deadline) -> true|false for works and reach },
 *   each async; a verb left out is answered unsupported;
 * - `classify(error)`: the class of an error that is not a HookError
 *   (undefined lets mesh-provide read the words);
 * - `close()`: releases the backend's connections.
 */
export async function runHook({ name, secrets = [], verbs, classify = () => undefined, close = async () => {} }) {
  logName = name;
  const answer = (request) => reply(request, { name, verbs, classify });
  const mode = process.argv[2];
  if (mode === undefined) {
    log('usage: hook serve | hook VERB (one JSON request on stdin)');
    process.exit(2);
  }
  if (mode === 'serve') {
    serving = true;
    // Secrets announced before serving began (readSecretFile at start) are
    // said first, as a line, with those given here.
    const before = hookSecrets;
    hookSecrets = [];
    announceSecrets([...new Set([...before, ...secrets])]);
    await serve(answer);
    await close();
    process.exit(0);
  }
  if (secrets.length > 0) announceSecrets([...new Set([...hookSecrets, ...secrets])]);
  const text = await readAll(process.stdin);
  let request;
  try {
    request = JSON.parse(text);
  } catch (error) {
    log(`the request on stdin is not JSON: ${error.message}`);
    process.exit(2);
  }
  if (request?.verb !== mode) {
    log(`the request says verb ${JSON.stringify(request?.verb)} but the hook was run as ${JSON.stringify(mode)}`);
    process.exit(2);
  }
  const replied = await answer(request);
  if (announcedInExec !== null && request.verb !== 'hello') replied.secrets = announcedInExec;
  process.stdout.write(`${JSON.stringify(replied)}\n`);
  await close();
  process.exit(replied.ok === false ? 1 : 0);
}

/** Serve mode: every line a request, answered as soon as it is done. */
async function serve(answer) {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const inFlight = new Set();
  for await (const line of lines) {
    if (line.trim() === '') continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      log(`a request line is not JSON (${error.message}); ignored`);
      continue;
    }
    if (typeof request !== 'object' || request === null || !Number.isInteger(request.id)) {
      log('a request without an integer id; ignored');
      continue;
    }
    const done = answer(request).then((replied) => {
      process.stdout.write(`${JSON.stringify(replied)}\n`);
    });
    inFlight.add(done);
    done.finally(() => inFlight.delete(done));
  }
  await Promise.allSettled([...inFlight]);
}

/** Thrown by a verb the hook does not do (or left out): answered unsupported. */
export class Unsupported extends Error {}

function text(request, key) {
  const value = request[key];
  if (typeof value !== 'string' || value === '') throw new HookError('refused', `the request's ${key} is not a string`);
  return value;
}

/** The reply to one request. Never throws. */
async function reply(request, { name, verbs, classify }) {
  const id = request.id;
  if (request.v !== VERSION) {
    return { id, ok: false, class: 'refused', error: `${name} speaks protocol version ${VERSION}, not ${request.v}` };
  }
  const secret = typeof request.secret === 'string' ? request.secret : undefined;
  const asked = typeof request.provider === 'string' && request.provider !== '' ? request.provider : undefined;
  return requestProvider.run(asked, () => requestSecret.run(secret, async () => {
    const deadline = deadlineOf(request);
    const verb = (key) => {
      const found = verbs[key];
      if (typeof found !== 'function') throw new Unsupported();
      return found;
    };
    try {
      switch (request.verb) {
        case 'hello':
          if (typeof verbs.hello === 'function') await verbs.hello(deadline);
          return { id, name, secrets: hookSecrets, repairs: [] };
        case 'held':
          return { id, held: await verb('held')(deadline) };
        case 'ensure':
        case 'check': {
          if (typeof request.consumer?.name !== 'string') throw new HookError('refused', "the request's consumer has no name");
          const consumer = { ...request.consumer, provider: provider() };
          // A verb may say what it found changed by hand and brought back.
          const done = await verb(request.verb)(consumer, text(request, 'secret'), deadline);
          return done?.mended ? { id, ok: true, mended: String(done.mended) } : { id, ok: true };
        }
        case 'retire':
        case 're-enable':
        case 'delete':
          await verb(request.verb)(text(request, 'consumer'), deadline);
          return { id, ok: true };
        case 'probe':
          await verb('probe')(text(request, 'fault'), deadline);
          return { id, ok: true };
        case 'repair':
          return { id, ok: true, detail: String((await verb('repair')(text(request, 'fault'), deadline)) ?? '') };
        case 'by-hand': {
          const asked = {
            action: text(request, 'action'),
            consumer: text(request, 'consumer'),
            secret: typeof request.secret === 'string' ? request.secret : undefined,
            target: typeof request.target === 'string' ? request.target : undefined,
            provider: provider(),
          };
          const said = await (verbs.byHand ?? verbs['by-hand'] ?? verb('byHand')).call(verbs, asked, deadline);
          if (asked.action === 'works') return { id, ok: true, works: said === true };
          if (asked.action === 'reach') return { id, ok: true, reaches: said === true };
          return { id, ok: true };
        }
        default:
          return { id, unsupported: true };
      }
    } catch (error) {
      if (error instanceof Unsupported) return { id, unsupported: true };
      const klass = error instanceof HookError ? error.class : classify(error);
      // Belt and braces: mesh-provide redacts too, but a secret never leaves here.
      const words = redact(String(error?.message ?? error), [secret]);
      return klass === undefined ? { id, ok: false, error: words } : { id, ok: false, class: klass, error: words };
    }
  }));
}

async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

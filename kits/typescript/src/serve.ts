// serve(hook): mesh-provide's hook protocol (v 1) run for a typed handler
// object, in both modes:
//
//   hook serve    one JSON request a line on stdin, one JSON reply a line on
//                 stdout carrying the request's id, several in flight at once
//   hook VERB     exec mode: one JSON request on stdin, one JSON reply on
//                 stdout, exit 0 on success and 1 on failure
//
// A handler returns its reply (or nothing: `{ok: true}`) and throws
// HookError(class, message) on failure. stdout carries replies only: log with
// log() (stderr). The consumer's secret arrives in the request and is cut out
// of any error text before a reply, as are the secrets announced with
// announceSecrets().

import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';

import {
  type ByHandAction,
  type ByHandReplies,
  type ByHandRequestOf,
  type Class,
  type Failure,
  type ProviderFault,
  type Reply,
  type ReplyOf,
  type Request,
  type RequestOf,
  type Success,
  type Verb,
  VERSION,
  isClass,
} from './protocol.js';

/** A value or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

/** What a handler is given beside its request: the call's deadline. */
export interface Call {
  /** The request's id. */
  readonly id: number;
  /** How long mesh-provide waits for this reply (the request's `deadline_ms`). */
  readonly deadlineMs: number;
  /** When it stops waiting, in `Date.now()` milliseconds. */
  readonly deadline: number;
  /** Aborted at the deadline: hand it to what takes time. */
  readonly signal: AbortSignal;
  /** Milliseconds left until the deadline (0 once past). */
  remainingMs(): number;
  /**
   * Milliseconds a wait may take: what is left, at most `capMs` (a connect
   * timeout of its own, say), at least 1 (a client given 0 may wait for
   * ever). Hand it to a client's timeout: `{ timeout: call.timeoutMs() }`.
   */
  timeoutMs(capMs?: number): number;
  /**
   * The provider instance (`module@machine`) the call is made for: the
   * request's `provider`, else MESH_PROVIDER (the instance the hook was
   * started for), else ''. In serve mode one process may be asked for more
   * than one instance: act on this, not on MESH_PROVIDER.
   */
  readonly provider: string;
}

/** A handler's reply for a verb whose success carries nothing: returning nothing is `{ok: true}`. */
type Done<R> = Success extends R ? R | void : R;

/** A handler for one verb: its request, its call, its reply. */
export type Handler<V extends Verb> = (request: RequestOf<V>, call: Call) => Awaitable<Done<ReplyOf<V>>>;

/** A handler for one by-hand action. */
export type ByHandHandler<A extends ByHandAction> = (
  request: ByHandRequestOf<A>,
  call: Call,
) => Awaitable<Done<ByHandReplies[A]>>;

/** The hook's handlers, one a verb; a verb (or by-hand action) without one is answered `{unsupported: true}`. */
export interface Handlers {
  /** Optional: without it, hello says the hook's name and its announced secrets. */
  hello?: Handler<'hello'>;
  ensure?: Handler<'ensure'>;
  check?: Handler<'check'>;
  held?: Handler<'held'>;
  retire?: Handler<'retire'>;
  're-enable'?: Handler<'re-enable'>;
  delete?: Handler<'delete'>;
  probe?: Handler<'probe'>;
  repair?: Handler<'repair'>;
  /** The conform-only verb, one handler an action. */
  'by-hand'?: { [A in ByHandAction]?: ByHandHandler<A> };
}

/** A hook: its name and handlers. */
export interface Hook {
  /** Said in hello and in front of its log lines. */
  name: string;
  handlers: Handlers;
  /**
   * Whether the hook can work as its administrator now: `null` (or nothing)
   * when it can, else the provider fault. Asked after every hello whose
   * handler succeeded and every probe that found its known fault absent,
   * unless the handler's reply says `fault` itself; its answer is that
   * reply's `fault`. In exec mode hello is asked once a pass; in serve mode
   * once a start, then probes (say known faults in hello's `repairs` for
   * them to be asked).
   */
  adminFault?: (call: Call) => Awaitable<ProviderFault | null | undefined>;
  /** The class of an error that is no HookError (undefined: mesh-provide reads the message). */
  classify?: (error: unknown) => Class | undefined;
  /** Releases the backend's connections before the process ends. */
  close?: () => Awaitable<void>;
}

/** A failure with its class: `throw new HookError('refused', 'the message')`. */
export class HookError extends Error {
  /** The failure's class. */
  readonly class: Class;

  constructor(klass: Class, message: string) {
    super(message);
    this.name = 'HookError';
    this.class = isClass(klass) ? klass : 'refused';
  }
}

/** How this process was run: `serve`, or the verb (exec mode). */
const mode: string | undefined = process.argv[2];

let logName = 'hook';
let announced: string[] = [];

/** The secrets announced last (the hook's own, redacted by mesh-provide). */
export function announcedSecrets(): readonly string[] {
  return announced;
}

/**
 * Announces the hook's own secrets (its administrator's password): the set
 * mesh-provide removes from every word is replaced by `list`. Call it BEFORE
 * anything that may write them to stderr (a log line, an error): in serve
 * mode it writes the `{"secrets": [...]}` line at once; in exec mode every
 * reply carries them. Announcing the same set again writes nothing.
 */
export function announceSecrets(list: readonly string[]): void {
  const next = [...new Set(list.filter((secret) => typeof secret === 'string' && secret !== ''))];
  if (next.length === announced.length && next.every((secret, i) => secret === announced[i])) return;
  announced = next;
  if (mode === 'serve') process.stdout.write(`${JSON.stringify({ secrets: announced })}\n`);
}

/** What readSecretFile read last, by variable: announced together. */
const fileSecrets = new Map<string, string>();

/**
 * A secret of the hook's own (its administrator's password), read from the
 * file the environment variable `envVar` names (in `env`, by default
 * `process.env`): the file read again at every call, its surrounding
 * whitespace (the line break) trimmed, and the secret announced
 * (announceSecrets, with every other secret read through this function)
 * BEFORE it is returned. Call it for every new administrator session (a
 * connection, or every call): a rotated password then needs no restart.
 *
 * Throws HookError('secret-unreadable'), naming the variable and the file
 * (never what it holds), when `envVar` is not set, the file cannot be read
 * or it holds only whitespace.
 */
export async function readSecretFile(envVar: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const path = env[envVar] ?? '';
  if (path === '') {
    throw new HookError('secret-unreadable', `${envVar} is not set: it names the file holding the hook's administrator password`);
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new HookError('secret-unreadable', `the secret file ${path} (${envVar}) cannot be read: ${typeof code === 'string' ? code : messageOf(error)}`);
  }
  const secret = text.trim();
  if (secret === '') throw new HookError('secret-unreadable', `the secret file ${path} (${envVar}) is empty`);
  fileSecrets.set(envVar, secret);
  announceSecrets([...new Set(fileSecrets.values())].sort());
  return secret;
}

/**
 * One line on stderr, which mesh-provide logs (redacted, bounded); the
 * announced secrets are cut out here too, and line breaks in `message`
 * (a backend's multi-line error) become spaces: one call, one line.
 */
export function log(message: string): void {
  process.stderr.write(`${logName}: ${redact(message, []).replace(/[\r\n]+/g, ' ')}\n`);
}

/** `message` with every one of `secrets` and of the announced ones replaced by `[redacted]`. */
export function redact(message: string, secrets: readonly unknown[]): string {
  let out = message;
  for (const secret of [...secrets, ...announced]) {
    if (typeof secret === 'string' && secret !== '') out = out.split(secret).join('[redacted]');
  }
  return out;
}

/**
 * Runs `hook` as mesh-provide starts it: `hook serve` answers requests until
 * stdin closes; `hook VERB` answers the one request on stdin and exits (0,
 * or 1 when the reply says `ok: false`). Calls `close` before the process ends.
 */
export async function serve(hook: Hook): Promise<never> {
  logName = hook.name;
  if (mode === undefined) {
    log('usage: hook serve | hook VERB (one JSON request on stdin)');
    process.exit(2);
  }
  if (mode === 'serve') {
    await serveLines(hook);
    await hook.close?.();
    process.exit(0);
  }
  const text = await readAll(process.stdin);
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch (error) {
    log(`the request on stdin is not JSON: ${messageOf(error)}`);
    process.exit(2);
  }
  if (!isRequest(request)) {
    log('the request on stdin is not an object with an integer id');
    process.exit(2);
  }
  if (request.verb !== mode) {
    log(`the request says verb ${JSON.stringify(request.verb)} but the hook was run as ${JSON.stringify(mode)}`);
    process.exit(2);
  }
  const replied = await answer(hook, request);
  // The reply's own secrets (a hello's) and the announced ones, together.
  const own = 'secrets' in replied && Array.isArray(replied.secrets) ? (replied.secrets as string[]) : [];
  const all = [...new Set([...own, ...announced])];
  const out = all.length > 0 ? { ...replied, secrets: all } : replied;
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await hook.close?.();
  process.exit('ok' in out && out.ok === false ? 1 : 0);
}

/** Serve mode: every line a request, each answered as soon as it is done. */
async function serveLines(hook: Hook): Promise<void> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const inFlight = new Set<Promise<void>>();
  for await (const line of lines) {
    if (line.trim() === '') continue;
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch (error) {
      log(`a request line is not JSON (${messageOf(error)}); ignored`);
      continue;
    }
    if (!isRequest(request)) {
      log('a request without an integer id; ignored');
      continue;
    }
    const done = answer(hook, request).then((replied) => {
      process.stdout.write(`${JSON.stringify(replied)}\n`);
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  }
  await Promise.allSettled([...inFlight]);
}

/** A request's shape, enough to answer it: an object with an integer id. */
function isRequest(value: unknown): value is Request {
  return (
    typeof value === 'object' &&
    value !== null &&
    Number.isInteger((value as { id?: unknown }).id) &&
    typeof (value as { verb?: unknown }).verb === 'string'
  );
}

/** What a call is made of: a request's id, `deadline_ms` and `provider`. */
export interface CallFor {
  id: number;
  deadline_ms?: number;
  provider?: string;
}

/**
 * The call serve() hands a handler with `request`: its deadline the
 * request's `deadline_ms`, else MESH_HOOK_TIMEOUT_MS, else 30 s, from now;
 * its provider the request's, else MESH_PROVIDER, else ''. For a program
 * calling the handlers itself (a benchmark, a test): `handlers.check(request,
 * callOf(request))`.
 */
export function callOf(request: CallFor): Call {
  const given = Number(request.deadline_ms);
  const fromEnv = Number(process.env.MESH_HOOK_TIMEOUT_MS);
  const deadlineMs = given > 0 ? given : fromEnv > 0 ? fromEnv : 30_000;
  const deadline = Date.now() + deadlineMs;
  const remainingMs = () => Math.max(0, deadline - Date.now());
  return {
    id: request.id,
    deadlineMs,
    deadline,
    signal: AbortSignal.timeout(deadlineMs),
    remainingMs,
    timeoutMs: (capMs = Infinity) => Math.max(1, Math.floor(Math.min(remainingMs(), capMs))),
    provider: providerOf(request),
  };
}

/** The request's provider instance, else MESH_PROVIDER's, else ''. */
function providerOf(request: CallFor): string {
  const given: unknown = request.provider;
  return typeof given === 'string' && given !== '' ? given : (process.env.MESH_PROVIDER ?? '');
}

/** The reply to one request, with its id. Never throws. */
async function answer(hook: Hook, request: Request): Promise<Reply> {
  const id = request.id;
  if (request.v !== VERSION) {
    return { id, ok: false, class: 'refused', error: `${hook.name} speaks protocol version ${VERSION}, not ${String(request.v)}` };
  }
  try {
    const call = callOf(request);
    // Every handler's request names its instance, MESH_PROVIDER's when it came without one.
    return { ...(await dispatch(hook, { ...request, provider: call.provider }, call)), id } as Reply;
  } catch (error) {
    const klass = error instanceof HookError ? error.class : hook.classify?.(error);
    const message = redact(messageOf(error), [(request as { secret?: unknown }).secret]);
    const failure: Failure = klass === undefined ? { ok: false, error: message } : { ok: false, class: klass, error: message };
    return { ...failure, id };
  }
}

/** Calls the verb's handler; a missing one is unsupported, nothing returned is `{ok: true}`. */
async function dispatch(hook: Hook, request: Request, call: Call): Promise<Exclude<Reply, { id: number }> | object> {
  wellFormed(request);
  const handlers = hook.handlers;
  const ok = (done: object | void): object => done ?? { ok: true };
  switch (request.verb) {
    case 'hello': {
      const said = handlers.hello === undefined ? {} : await handlers.hello(request, call);
      if ('ok' in said || 'unsupported' in said) return said;
      // First: adminFault may read and announce a secret.
      const fault = said.fault !== undefined ? {} : await adminFault(hook, call);
      return { name: hook.name, ...said, ...fault, secrets: [...announced, ...(said.secrets ?? [])] };
    }
    case 'ensure':
      return handlers.ensure ? ok(await handlers.ensure(request, call)) : unsupported;
    case 'check':
      return handlers.check ? ok(await handlers.check(request, call)) : unsupported;
    case 'held':
      return handlers.held ? await handlers.held(request, call) : unsupported;
    case 'retire':
      return handlers.retire ? ok(await handlers.retire(request, call)) : unsupported;
    case 're-enable':
      return handlers['re-enable'] ? ok(await handlers['re-enable'](request, call)) : unsupported;
    case 'delete':
      return handlers.delete ? ok(await handlers.delete(request, call)) : unsupported;
    case 'probe': {
      if (!handlers.probe) return unsupported;
      const said = ok(await handlers.probe(request, call));
      if (!('ok' in said) || said.ok !== true || 'fault' in said) return said;
      return { ...said, ...(await adminFault(hook, call)) };
    }
    case 'repair':
      return handlers.repair ? ok(await handlers.repair(request, call)) : unsupported;
    case 'by-hand':
      return byHand(handlers['by-hand'] ?? {}, request, call);
    default:
      return unsupported;
  }
}

const unsupported = { unsupported: true } as const;

/**
 * Refuses a request that lacks what its type says it has (mesh-provide
 * always sends it; another caller may not): a handler can trust its
 * request's `consumer`, `secret`, `fault`, `action` and `target`.
 */
function wellFormed(request: Request): void {
  switch (request.verb) {
    case 'ensure':
    case 'check':
      if (typeof request.consumer?.name !== 'string') throw new HookError('refused', "the request's consumer has no name");
      text(request, 'secret');
      return;
    case 'retire':
    case 're-enable':
    case 'delete':
      text(request, 'consumer');
      return;
    case 'probe':
    case 'repair':
      text(request, 'fault');
      return;
    case 'by-hand':
      text(request, 'action');
      text(request, 'consumer');
      if (request.action === 'make' || request.action === 'works' || request.action === 'reach') text(request, 'secret');
      if (request.action === 'reach') text(request, 'target');
      return;
    default:
      return;
  }
}

/** The request's `key`, a string that is not empty; else the request is refused. */
function text(request: Request, key: string): string {
  const value: unknown = (request as unknown as Record<string, unknown>)[key];
  if (typeof value !== 'string' || value === '') throw new HookError('refused', `the request's ${key} is not a string`);
  return value;
}

/** The reply's `fault` member from hook.adminFault: none (no adminFault), null, or the fault (its message redacted). */
async function adminFault(hook: Hook, call: Call): Promise<{ fault?: ProviderFault | null }> {
  if (hook.adminFault === undefined) return {};
  const said = await hook.adminFault(call);
  if (said === null || said === undefined) return { fault: null };
  const fault: ProviderFault = { class: isClass(said.class) ? said.class : 'refused' };
  if (typeof said.error === 'string' && said.error !== '') fault.error = redact(said.error, []);
  return { fault };
}

/** A by-hand action's handler called, or unsupported. */
async function byHand(actions: NonNullable<Handlers['by-hand']>, request: RequestOf<'by-hand'>, call: Call): Promise<object> {
  switch (request.action) {
    case 'change':
      return actions.change ? ((await actions.change(request, call)) ?? { ok: true }) : unsupported;
    case 'make':
      return actions.make ? ((await actions.make(request, call)) ?? { ok: true }) : unsupported;
    case 'works':
      return actions.works ? await actions.works(request, call) : unsupported;
    case 'reach':
      return actions.reach ? await actions.reach(request, call) : unsupported;
    case 'remove':
      return actions.remove ? ((await actions.remove(request, call)) ?? { ok: true }) : unsupported;
    default:
      return unsupported;
  }
}

/** An error's message. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

// The hook side of mesh-provide's protocol (v 1) for node, in both modes:
//
//   hook serve    one JSON request a line on stdin, one JSON reply a line on
//                 stdout carrying the request's id; several requests in flight
//   hook VERB     exec mode: one JSON request on stdin, one JSON reply on
//                 stdout, exit 0 on success and 1 on failure
//
// A hook module gives runHook() its verbs; each verb returns (or resolves)
// on success and throws on failure. stdout carries replies only: log with
// log() (stderr). The consumer's secret arrives in the request on stdin and
// is never logged; it is also cut out of any error text before a reply.
// docs/hooks.md describes the protocol.

import { createInterface } from 'node:readline';

/** The protocol version this module speaks. */
export const VERSION = 1;

/** The four classes a failure may name. */
export const CLASSES = ['credentials-rejected', 'unreachable', 'secret-unreadable', 'refused'];

/** A failure with its class: `throw new HookError('refused', 'words')`. */
export class HookError extends Error {
  constructor(klass, message) {
    super(message);
    this.class = CLASSES.includes(klass) ? klass : 'refused';
  }
}

let logName = 'hook';

/** One line on stderr, which mesh-provide logs (redacted, bounded). */
export function log(words) {
  process.stderr.write(`${logName}: ${words}\n`);
}

/**
 * Answers requests with `verbs` until stdin closes (serve) or after the one
 * request (exec), then calls `close` and ends the process.
 *
 * - `name`: the hook's name, said in hello and used in its log lines;
 * - `secrets`: the hook's own secrets (its administrator's password), said
 *   in hello so that mesh-provide removes them from every word;
 * - `verbs`: { ensure(consumer, secret), check(consumer, secret) (either
 *   may resolve to { mended: 'words' }: what it found changed by hand and
 *   brought back),
 *   held() -> [{consumer, retired}], retire(name), 're-enable'(name),
 *   delete(name) }, each async;
 * - `classify(error)`: the class of an error that is not a HookError
 *   (undefined lets mesh-provide read the words);
 * - `close()`: releases the backend's connections.
 */
export async function runHook({ name, secrets = [], verbs, classify = () => undefined, close = async () => {} }) {
  logName = name;
  const answer = (request) => reply(request, { name, secrets, verbs, classify });
  const mode = process.argv[2];
  if (mode === undefined) {
    log('usage: hook serve | hook VERB (one JSON request on stdin)');
    process.exit(2);
  }
  if (mode === 'serve') {
    await serve(answer);
    await close();
    process.exit(0);
  }
  const text = await readAll(process.stdin);
  let request;
  try {
    request = JSON.parse(text);
  } catch (error) {
    log(`the request on stdin is not JSON: ${error.message}`);
    process.exit(2);
  }
  if (request.verb !== mode) {
    log(`the request says verb ${JSON.stringify(request.verb)} but the hook was run as ${JSON.stringify(mode)}`);
    process.exit(2);
  }
  const replied = await answer(request);
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

/** The reply to one request. Never throws. */
async function reply(request, { name, secrets, verbs, classify }) {
  const id = request.id;
  if (request.v !== VERSION) {
    return { id, ok: false, class: 'refused', error: `${name} speaks protocol version ${VERSION}, not ${request.v}` };
  }
  try {
    switch (request.verb) {
      case 'hello':
        return { id, name, secrets, repairs: [] };
      case 'held':
        return { id, held: await verbs.held() };
      case 'ensure':
      case 'check': {
        // A verb may say what it found changed by hand and brought back.
        const done = await verbs[request.verb](request.consumer, request.secret);
        return done?.mended ? { id, ok: true, mended: String(done.mended) } : { id, ok: true };
      }
      case 'retire':
      case 're-enable':
      case 'delete':
        await verbs[request.verb](request.consumer);
        return { id, ok: true };
      default:
        return { id, unsupported: true };
    }
  } catch (error) {
    const klass = error instanceof HookError ? error.class : classify(error);
    let words = String(error?.message ?? error);
    // Belt and braces: mesh-provide redacts too, but a secret never leaves here.
    for (const secret of [request.secret, ...secrets]) {
      if (typeof secret === 'string' && secret !== '') words = words.split(secret).join('[redacted]');
    }
    return klass === undefined ? { id, ok: false, error: words } : { id, ok: false, class: klass, error: words };
  }
}

async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

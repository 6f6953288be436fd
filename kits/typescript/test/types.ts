// The kit's type test (tests/kit_typescript.rs compiles it with
// `tsc -p test --noEmit`): what mesh-provide reads as a bad reply must not
// compile. Every `@ts-expect-error` line is a reply that must be refused;
// tsc fails on one that compiles ("Unused '@ts-expect-error' directive").

import type { Failure, HeldEntry, Reply, ReplyOf, Request } from '../src/protocol.js';
import { type Handlers, HookError } from '../src/serve.js';

// Good replies compile.
export const good: Reply[] = [
  { id: 1, name: 'mariadb', secrets: ['s'], repairs: [] },
  { id: 1 },
  { id: 2, ok: true },
  { id: 2, ok: true, mended: 'password set back' },
  { id: 3, ok: false, error: 'refused', class: 'credentials-rejected' },
  { id: 4, held: [{ consumer: 'forge' }, { consumer: 'wiki', retired: true }] },
  { id: 5, unsupported: true },
  { id: 6, ok: true, works: false },
  { id: 7, name: 'mariadb', fault: { class: 'credentials-rejected', error: 'Access denied for mesh-admin' } },
  { id: 8, fault: null },
  { id: 9, ok: true, fault: {} },
];

// @ts-expect-error a provider fault of an unknown class
export const badFault: ReplyOf<'hello'> = { fault: { class: 'sad' } };
// @ts-expect-error a provider fault that is a string
export const wordFault: ReplyOf<'probe'> = { ok: true, fault: 'down' };

// @ts-expect-error a failure without its error
export const noError: Failure = { ok: false };
// @ts-expect-error a failure without its error, as a reply
export const noErrorReply: Reply = { id: 1, ok: false };
// @ts-expect-error a hello saying ok
export const helloOk: ReplyOf<'hello'> = { ok: true, name: 'x' };
// @ts-expect-error an unknown class
export const badClass: Failure = { ok: false, error: 'e', class: 'oops' };
// @ts-expect-error a held entry without its consumer
export const noConsumer: HeldEntry = { retired: true };
// @ts-expect-error a held reply saying ok
export const heldOk: ReplyOf<'held'> = { ok: true, held: [] };
// @ts-expect-error a reply without its id
export const noId: Reply = { ok: true };
// @ts-expect-error a request without deadline_ms
export const noDeadline: Request = { v: 1, id: 1, verb: 'hello' };
// @ts-expect-error a by-hand request with an unknown action
export const badAction: Request = { v: 1, id: 1, verb: 'by-hand', action: 'smash', consumer: 'x', deadline_ms: 5 };

export const handlers: Handlers = {
  ensure: (request, call) => {
    const name: string = request.consumer.name;
    const left: number = call.remainingMs();
    if (left < 0) throw new HookError('unreachable', name);
  },
  // @ts-expect-error check may not answer a failure without its error
  check: () => ({ ok: false }),
  // @ts-expect-error held answers entries, not names
  held: () => ({ held: ['forge'] }),
  'by-hand': {
    works: () => ({ ok: true, works: true }),
    // @ts-expect-error reach answers reaches, not works
    reach: () => ({ ok: true, works: true }),
  },
};

// Every request names the provider instance it is made for, and so does the call.
export const providerOfEveryVerb: Handlers = {
  held: (request, call) => {
    const instance: string = request.provider;
    return { held: instance === call.provider ? [] : [] };
  },
  retire: (request, call) => {
    const both: [string, string] = [request.provider, call.provider];
    void both;
  },
};
// @ts-expect-error a request without its provider
export const noProvider: Request = { v: 1, id: 1, verb: 'held', deadline_ms: 1000 };

// mesh-provide's hook protocol (version 1) as TypeScript types: what a hook
// reads (a request per verb, a discriminated union on `verb`) and what it may
// write back (a reply per verb). docs/hooks.md describes the protocol; these
// types are its reference for TypeScript, and serve() (./serve.ts) speaks it.
//
// The replies are written so that what mesh-provide reads as a bad reply does
// not compile: a failure without its `error`, a hello saying `ok`, a `held`
// entry without its `consumer`, an unknown class.

/** The protocol version this kit speaks. */
export const VERSION = 1;

/** The four classes a failure may name (any other is a bad reply). */
export const CLASSES = ['credentials-rejected', 'unreachable', 'secret-unreadable', 'refused'] as const;

/** A failure's class. */
export type Class = (typeof CLASSES)[number];

/** Whether `value` is one of the four classes. */
export function isClass(value: unknown): value is Class {
  return typeof value === 'string' && (CLASSES as readonly string[]).includes(value);
}

/** A consumer, as `ensure` and `check` carry it. */
export interface Consumer {
  /** Its name: `^[a-z0-9][a-z0-9_-]{0,62}$` (at most 63 bytes, no `.`, space or quote). */
  name: string;
  /** The machine it runs on. */
  machine: string;
  /** The provision it asks for. */
  provision: string;
  /** Its entry's `options` in the contributions file, as given (`{}` or `null` when none). */
  options: unknown;
}

/** What every request carries. */
interface RequestBase {
  /** The protocol version: 1. */
  v: 1;
  /** Unique for the provider's life, from 1; the reply carries it back. */
  id: number;
  /** How long mesh-provide waits for this reply, in milliseconds. */
  deadline_ms: number;
  /**
   * The provider instance (`module@machine`) the call is made for: mark what
   * the hook makes with it, list in `held` only its, and act in `retire`,
   * `re-enable` and `delete` only on its (docs/hooks.md, "Two instances, one
   * backend"). serve() fills it from MESH_PROVIDER when a request lacks it.
   */
  provider: string;
}

/** `hello`: say who the hook is (asked after every start). */
export interface HelloRequest extends RequestBase {
  verb: 'hello';
}

/** `ensure`: make the provision if missing, bring the given secret to the backend; idempotent. */
export interface EnsureRequest extends RequestBase {
  verb: 'ensure';
  consumer: Consumer;
  /** The consumer's minted secret: never log it, never put it on a command line. */
  secret: string;
}

/** `check`: prove the provision works as the consumer would use it (log in as it). */
export interface CheckRequest extends RequestBase {
  verb: 'check';
  consumer: Consumer;
  /** The consumer's minted secret. */
  secret: string;
}

/** `held`: list every provision the hook made, and only those. */
export interface HeldRequest extends RequestBase {
  verb: 'held';
}

/** `retire`: disable it, reversibly, nothing deleted; idempotent. */
export interface RetireRequest extends RequestBase {
  verb: 'retire';
  /** The consumer's name. */
  consumer: string;
}

/** `re-enable`: enable a retired one again; idempotent. */
export interface ReEnableRequest extends RequestBase {
  verb: 're-enable';
  /** The consumer's name. */
  consumer: string;
}

/** `delete`: remove a retired one and its data; idempotent. */
export interface DeleteRequest extends RequestBase {
  verb: 'delete';
  /** The consumer's name. */
  consumer: string;
}

/** `probe`: tell whether a known fault (from hello's `repairs`) is present. */
export interface ProbeRequest extends RequestBase {
  verb: 'probe';
  fault: string;
}

/** `repair`: repair a known fault. */
export interface RepairRequest extends RequestBase {
  verb: 'repair';
  fault: string;
}

/** `by-hand change`: change the provision as a person would (another password), so check fails until ensure mends it. */
export interface ByHandChange extends RequestBase {
  verb: 'by-hand';
  action: 'change';
  consumer: string;
}

/** `by-hand make`: make a provision named `consumer` with `secret` as a person would, one the hook does not count as its own. */
export interface ByHandMake extends RequestBase {
  verb: 'by-hand';
  action: 'make';
  consumer: string;
  secret: string;
}

/** `by-hand works`: whether `consumer`'s provision works with `secret`. */
export interface ByHandWorks extends RequestBase {
  verb: 'by-hand';
  action: 'works';
  consumer: string;
  secret: string;
}

/** `by-hand reach`: whether `consumer`, logged in with `secret`, reaches `target`'s provision. */
export interface ByHandReach extends RequestBase {
  verb: 'by-hand';
  action: 'reach';
  consumer: string;
  secret: string;
  target: string;
}

/** `by-hand remove`: remove what `make` made (cleanup). */
export interface ByHandRemove extends RequestBase {
  verb: 'by-hand';
  action: 'remove';
  consumer: string;
}

/** The conform-only verb `by-hand` (the loop never calls it), on its `action`. */
export type ByHandRequest = ByHandChange | ByHandMake | ByHandWorks | ByHandReach | ByHandRemove;

/** A by-hand action's name. */
export type ByHandAction = ByHandRequest['action'];

/** Every request, on `verb` (and `action` for `by-hand`). */
export type Request =
  | HelloRequest
  | EnsureRequest
  | CheckRequest
  | HeldRequest
  | RetireRequest
  | ReEnableRequest
  | DeleteRequest
  | ProbeRequest
  | RepairRequest
  | ByHandRequest;

/** A verb's name. */
export type Verb = Request['verb'];

/** The request of verb `V`. */
export type RequestOf<V extends Verb> = Extract<Request, { verb: V }>;

/** The request of by-hand action `A`. */
export type ByHandRequestOf<A extends ByHandAction> = Extract<ByHandRequest, { action: A }>;

/** What any reply may carry: the hook's own secrets, replacing the set mesh-provide redacts. */
interface Secrets {
  secrets?: string[];
}

/** A success: `{ok: true}`, with `mended` when it brought back something changed by hand. */
export interface Success extends Secrets {
  ok: true;
  /** What it found changed by hand and brought back (ensure, check). */
  mended?: string;
  /** What it did (repair). */
  detail?: string;
}

/** A failure: `error` is required, `class` optional (without it mesh-provide reads the message). */
export interface Failure extends Secrets {
  ok: false;
  error: string;
  class?: Class;
}

/**
 * A provider fault: the hook cannot work as its administrator now (its
 * password refused, its backend out of reach). Said in hello's reply and in
 * a probe's success as `fault`; `null` says there is none. The loop
 * publishes it at once and `status` names it on the provider's line.
 */
export interface ProviderFault {
  /** Defaults to `refused`. */
  class?: Class;
  /** What is wrong and, best, how to fix it. */
  error?: string;
}

/** probe's success: the known fault is absent; `fault` may say a provider fault all the same. */
export interface ProbeSuccess extends Success {
  fault?: ProviderFault | null;
}

/** A known fault a hook can probe and repair (hello's `repairs`). */
export interface Repair {
  fault: string;
  /** Defaults to `credentials-rejected`. */
  class?: Class;
}

/** hello's success: every field optional, and no `ok` (a hello saying `ok` is a bad reply). */
export interface Hello extends Secrets {
  /** The hook's name, for the log. */
  name?: string;
  /** Known faults it can probe and repair. */
  repairs?: Repair[];
  /** The provider fault, or `null` for none (left out: none said). */
  fault?: ProviderFault | null;
  ok?: never;
}

/** One provision `held` lists. */
export interface HeldEntry {
  /** The consumer's name. */
  consumer: string;
  /** Whether it is retired; left out means false. */
  retired?: boolean;
}

/** held's success. */
export interface Held extends Secrets {
  held: HeldEntry[];
  ok?: never;
}

/** The answer to a verb (or by-hand action) the hook does not know. */
export interface Unsupported {
  unsupported: true;
}

/** by-hand works's success. */
export interface Works extends Secrets {
  ok: true;
  works: boolean;
}

/** by-hand reach's success. */
export interface Reaches extends Secrets {
  ok: true;
  reaches: boolean;
}

/** The line a serve-mode hook may write at any time, with no id: its own secrets, announced. */
export interface SecretsLine {
  secrets: string[];
}

/** The reply (without its id) to each verb. */
export interface Replies {
  hello: Hello | Failure | Unsupported;
  ensure: Success | Failure | Unsupported;
  check: Success | Failure | Unsupported;
  held: Held | Failure | Unsupported;
  retire: Success | Failure | Unsupported;
  're-enable': Success | Failure | Unsupported;
  delete: Success | Failure | Unsupported;
  probe: ProbeSuccess | Failure | Unsupported;
  repair: Success | Failure | Unsupported;
  'by-hand': Success | Failure | Works | Reaches | Unsupported;
}

/** The reply (without its id) to by-hand action `A`. */
export interface ByHandReplies {
  change: Success | Failure | Unsupported;
  make: Success | Failure | Unsupported;
  works: Works | Failure | Unsupported;
  reach: Reaches | Failure | Unsupported;
  remove: Success | Failure | Unsupported;
}

/** The reply (without its id) to verb `V`. */
export type ReplyOf<V extends Verb> = Replies[V];

/** A reply as written on stdout: the reply to one request, with its id. */
export type Reply = { [V in Verb]: ReplyOf<V> & { id: number } }[Verb];

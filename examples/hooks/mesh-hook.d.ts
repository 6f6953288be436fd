// Types of mesh-hook.mjs (the protocol's hook side for node), so that a hook
// written in TypeScript imports it typed:
//
//   import { runHook, HookError, type Verbs } from './mesh-hook.mjs';
//
// docs/hooks.md is the protocol.

/** The protocol version the module speaks. */
export declare const VERSION: 1;

/** A failure's class. */
export type Class = 'credentials-rejected' | 'unreachable' | 'secret-unreadable' | 'refused';

/** The four classes a failure may name. */
export declare const CLASSES: readonly Class[];

/** What `mesh-provide conform` asks a person to do (`by-hand`). */
export type ByHandAction = 'change' | 'make' | 'works' | 'reach' | 'remove';

/** The by-hand actions. */
export declare const BY_HAND_ACTIONS: readonly ByHandAction[];

/** The consumer an `ensure` or `check` carries. */
export interface Consumer {
  name: string;
  machine: string;
  provision: string;
  options: unknown;
  /** The provider instance (`module@machine`) the call is made for: the one listing this consumer. */
  provider: string;
}

/** One provision `held` lists. */
export interface HeldEntry {
  consumer: string;
  retired?: boolean;
}

/** A `by-hand` request: `secret` with make, works and reach; `target` with reach. */
export interface ByHand {
  action: ByHandAction;
  consumer: string;
  secret?: string;
  target?: string;
  /** The provider instance the call is made for. */
  provider: string;
}

/** What `ensure` or `check` may resolve to: what it found changed by hand and brought back. */
export type Mended = { mended?: string } | undefined | void;

/** A failure with its class: `throw new HookError('refused', 'words')`. */
export declare class HookError extends Error {
  constructor(klass: Class, message: string);
  readonly class: Class;
}

/** Thrown by a verb the hook does not do: answered `{"unsupported": true}`. */
export declare class Unsupported extends Error {}

/** When mesh-provide stops waiting for a call's reply. */
export declare class Deadline {
  /** `ms` from now. */
  constructor(ms: number);
  /** `performance.now()` when it passes. */
  readonly at: number;
  /** Milliseconds left (0 once it has passed). */
  remaining(): number;
  /** Whether it has passed. */
  expired(): boolean;
  /** Milliseconds a wait may take: what is left, at most `cap`, at least 1. */
  timeout(cap?: number): number;
}

/** The deadline of a request: its `deadline_ms`, else MESH_HOOK_TIMEOUT_MS, else 30 s. */
export declare function deadlineOf(request: { deadline_ms?: number } | null | undefined): Deadline;

/** The verbs a hook gives; each left out is answered unsupported. */
export interface Verbs {
  hello?(deadline: Deadline): Promise<void> | void;
  ensure?(consumer: Consumer, secret: string, deadline: Deadline): Promise<Mended> | Mended;
  check?(consumer: Consumer, secret: string, deadline: Deadline): Promise<Mended> | Mended;
  held?(deadline: Deadline): Promise<HeldEntry[]> | HeldEntry[];
  retire?(name: string, deadline: Deadline): Promise<void> | void;
  're-enable'?(name: string, deadline: Deadline): Promise<void> | void;
  delete?(name: string, deadline: Deadline): Promise<void> | void;
  /** Resolves when the fault is absent; throws when present (class unreachable: cannot tell). */
  probe?(fault: string, deadline: Deadline): Promise<void> | void;
  /** Resolves to what it did. */
  repair?(fault: string, deadline: Deadline): Promise<string> | string;
  /** conform's oracle: resolves to the answer of works and reach. */
  byHand?(request: ByHand, deadline: Deadline): Promise<boolean | undefined | void> | boolean | undefined | void;
}

/** What runHook is given. */
export interface HookOptions {
  /** Said in hello and at the start of every log line. */
  name: string;
  /** The hook's own secrets known at start (announced). */
  secrets?: string[];
  verbs: Verbs;
  /** The class of an error that is no HookError (undefined: mesh-provide reads the words). */
  classify?(error: unknown): Class | undefined;
  /** Releases the backend's connections at the end. */
  close?(): Promise<unknown> | unknown;
}

/** Answers requests until stdin closes (`hook serve`) or the one request (`hook VERB`), then exits. */
export declare function runHook(options: HookOptions): Promise<never>;

/**
 * The provider instance (`module@machine`) the request being answered is made
 * for (its `provider`, else MESH_PROVIDER, else ''): mark what the hook makes
 * with it, list in `held` only its, and act in retire, re-enable and delete
 * only on its.
 */
export declare function provider(): string;

/** One line on stderr (the secrets the kit knows cut out). */
export declare function log(words: string): void;

/** Says the hook's own secrets before anything that may write them (serve: a secrets line; exec: in the reply). */
export declare function announceSecrets(secrets: string[]): void;

/**
 * The hook's own secret read from the file `envVar` names (in `env`, by
 * default process.env), surrounding whitespace trimmed, announced before it
 * is returned; throws HookError('secret-unreadable') naming the file and the
 * variable when it is unset, unreadable or empty. Call it at every new
 * administrator session: a rotation needs no restart.
 */
export declare function readSecretFile(envVar: string, env?: Record<string, string | undefined>): string;

/** `words` with the hook's secrets, the current request's and `extra` replaced by `[redacted]`. */
export declare function redact(words: string, extra?: Array<string | undefined>): string;

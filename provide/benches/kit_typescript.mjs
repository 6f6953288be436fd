// The reference of `cargo bench -p mesh-provide --bench kit_typescript`: the
// MariaDB hook's own work, without mesh-provide. One node process imports
// the handlers of examples/hooks/mariadb (dist/backend.js: the same code the
// hook serves, the same administrator connections, the same client) and,
// for each line `N C` on stdin, runs what a loop pass asks of the hook for N
// consumers, `ensure` then `check` each, at most C consumers at once; it
// answers one line, `{"ms": ..., "failed": ...}`: the milliseconds that
// took, timed inside this process.
//
// Consumers and secrets are the benchmark's (the bench asks the same of
// mesh-provide): consumer-0000, ... with bench-secret-0000-7f3a9c1e5d, ...
// Settings as the hook's (MARIADB_HOOK_HOST, MARIADB_HOOK_PORT,
// MARIADB_HOOK_ADMIN_USER, MARIADB_HOOK_ADMIN_PASSWORD_FILE).

import { createInterface } from 'node:readline';

import { close, handlers } from '../../examples/hooks/mariadb/dist/backend.js';
import { callOf } from '../../examples/hooks/mariadb/node_modules/mesh-hook-kit/dist/index.js';

const pad = (i) => String(i).padStart(4, '0');
let id = 0;

/** The provider instance the bench runs for (MESH_PROVIDER, set by the bench: boundary::PROVIDER). */
const provider = process.env.MESH_PROVIDER || 'bench@bench-1';

/** A handler's reply; a failure (thrown or answered) is an error. */
async function must(reply) {
  const done = (await reply) ?? { ok: true };
  if (done.ok === false) throw new Error(done.error);
}

async function pass(n, concurrency) {
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const consumer = { name: `consumer-${pad(i)}`, machine: 'app-1', provision: 'mariadb', options: {} };
      const secret = `bench-secret-${pad(i)}-7f3a9c1e5d`;
      const request = (verb) => ({ v: 1, id: ++id, verb, consumer, secret, deadline_ms: 30_000, provider });
      try {
        for (const verb of ['ensure', 'check']) {
          const asked = request(verb);
          await must(handlers[verb](asked, callOf(asked)));
        }
      } catch (error) {
        failed += 1;
        process.stderr.write(`kit_typescript direct: ${consumer.name}: ${error.message}\n`);
      }
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return { ms: performance.now() - start, failed };
}

for await (const line of createInterface({ input: process.stdin })) {
  const [n, concurrency] = line.trim().split(/\s+/).map(Number);
  if (!(n > 0 && concurrency > 0)) continue;
  process.stdout.write(`${JSON.stringify(await pass(n, concurrency))}\n`);
}
await close();

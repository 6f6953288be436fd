// A hook on the built kit (dist) for test/runtime.test.mjs: its
// administrator "refused" while FIXTURE_FAULT is a file that exists, its
// password read with readSecretFile from FIXTURE_ADMIN_FILE; its repair
// logs a message of two lines and answers the call's timeoutMs(1000).
import { existsSync } from 'node:fs';

import { HookError, log, readSecretFile, serve } from '../dist/index.js';

await serve({
  name: 'fixture',
  handlers: {
    hello: async () => {
      await readSecretFile('FIXTURE_ADMIN_FILE');
      return {};
    },
    probe: (request) => {
      if (request.fault === 'gone') throw new HookError('unreachable', 'cannot tell');
    },
    repair: (request, call) => {
      log(`repairing ${request.fault}\r\nfor ${call.provider}`);
      return { ok: true, detail: String(call.timeoutMs(1000)) };
    },
  },
  adminFault: async () => {
    const password = await readSecretFile('FIXTURE_ADMIN_FILE');
    return existsSync(process.env.FIXTURE_FAULT ?? '')
      ? { class: 'credentials-rejected', error: `WRONGPASS for mesh-admin (${password})` }
      : null;
  },
});

// A hook on the built kit (dist) for test/runtime.test.mjs: its
// administrator "refused" while FIXTURE_FAULT is a file that exists, its
// password read with readSecretFile from FIXTURE_ADMIN_FILE.
import { existsSync } from 'node:fs';

import { HookError, readSecretFile, serve } from '../dist/index.js';

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
  },
  adminFault: async () => {
    const password = await readSecretFile('FIXTURE_ADMIN_FILE');
    return existsSync(process.env.FIXTURE_FAULT ?? '')
      ? { class: 'credentials-rejected', error: `WRONGPASS for mesh-admin (${password})` }
      : null;
  },
});

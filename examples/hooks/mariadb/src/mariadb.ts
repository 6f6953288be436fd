#!/usr/bin/env node
// A mesh-provide hook in TypeScript on kits/typescript: a MariaDB database
// and user per consumer, both named after it, the user allowed only its own
// database; checked by logging in as the consumer into it; retire = ACCOUNT
// LOCK, re-enable = ACCOUNT UNLOCK, delete = both dropped. src/backend.ts
// does the work (and says how).
//
// Settings (environment, which mesh-provide passes on but for its own MESH_*
// variables; no secret in it):
//   MARIADB_HOOK_HOST                 the server (default 127.0.0.1)
//   MARIADB_HOOK_PORT                 its port (default 3306)
//   MARIADB_HOOK_ADMIN_USER           the account the hook acts as (default mesh-admin)
//   MARIADB_HOOK_ADMIN_PASSWORD_FILE  a file holding its password (required)
//   MARIADB_HOOK_USER_HOST            the host part of the users it makes (default %)
//   MARIADB_HOOK_ADMIN_CONNECTIONS    administrator connections kept open (default 16)
//
//   mesh-provide --hook examples/hooks/mariadb/dist/mariadb.js --hook-mode serve ...
//
// Build it once: `npm ci && npm run build` here (tsc, then chmod +x on this
// entry file: tsc writes no executable bit); the kit is built first
// (`npm ci && npm run build` in kits/typescript). scripts/lib.sh's
// ensure_kit_typescript does both.

import { serve } from 'mesh-hook-kit';

import { adminFault, classify, close, handlers } from './backend.js';

await serve({ name: 'mariadb', handlers, adminFault, classify, close });

#!/usr/bin/env node
// A mesh-provide hook in TypeScript on kits/typescript: a MariaDB database
// and user per consumer (src/backend.ts says what it does and its settings).
//
//   mesh-provide --hook examples/hooks/mariadb/dist/mariadb.js --hook-mode serve ...
//
// Build it once: `npm ci && npm run build` here (tsc, then chmod +x on this
// entry file: tsc writes no executable bit); the kit is built first
// (`npm ci && npm run build` in kits/typescript). scripts/lib.sh's
// ensure_kit_typescript does both.

import { serve } from 'mesh-hook-kit';

import { classify, close, handlers } from './backend.js';

await serve({ name: 'mariadb', handlers, classify, close });

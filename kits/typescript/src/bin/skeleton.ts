#!/usr/bin/env node
// The smallest hook on the kit: it says hello and answers every other verb
// `{"unsupported": true}`. A template to copy (docs/kits/typescript.md), and
// what the kit's build proves: a compiled entry file made executable
// (`npm run build`: tsc, then chmod +x dist/bin/*.js).

import { serve } from '../index.js';

await serve({ name: 'skeleton', handlers: {} });

// Lets TypeScript (module resolution node16, nodenext or bundler) find mesh-hook.d.ts for './mesh-hook.mjs'.
export * from './mesh-hook.js';

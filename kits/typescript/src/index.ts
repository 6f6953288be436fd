// mesh-hook-kit: write a mesh-provide hook in TypeScript. The protocol's
// types (./protocol.ts) and serve() (./serve.ts), which runs a typed handler
// object in serve and exec mode. docs/kits/typescript.md tells how.

export * from './protocol.js';
export * from './serve.js';

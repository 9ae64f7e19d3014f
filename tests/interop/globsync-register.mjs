// Preload for the conformance suite on Node 20 (fs-globsync.mjs says why):
//
//   node --import ./globsync-register.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js ...
//
// `module.register` exists since Node 20.6; where `fs` has `globSync` (Node 22+) nothing is done.
import { register } from 'node:module';
import fs from 'node:fs';

if (typeof fs.globSync !== 'function') register('./globsync-hooks.mjs', import.meta.url);

// `fs` as Node 22 has it: every export of node:fs, plus a small `globSync`.
//
// Why: the conformance suite's CLI (@modelcontextprotocol/conformance, run by
// tests/tests/interop/conformance.rs) imports `globSync` from "fs" by name, which Node has only
// since 22; on Node 20 the CLI fails at link time, before any code runs. It uses the function
// only to summarise `**/checks.json` files, so this implements that one pattern shape. Loaded in
// place of `fs` for the suite's own modules only (globsync-hooks.mjs), and only where `fs` lacks
// `globSync` (globsync-register.mjs): on Node 22 and later none of this runs.
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  const name = String(pattern).replace(/^\*\*\//, '');
  if (name.includes('*')) throw new Error(`globSync shim: unsupported pattern ${pattern}`);
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(cwd, rel), { withFileTypes: true })) {
      const p = rel ? path.join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(p);
      else if (e.name === name) out.push(p);
    }
  };
  walk('');
  return out;
}

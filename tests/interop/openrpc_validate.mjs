// Validates an OpenRPC document with `@open-rpc/schema-utils-js`, the validator OpenRPC's own
// tools use: the meta-schema of the document's version, and the Specification Extensions the
// document declares in `x-extensions`, applied to the objects they name.
//
//   node tests/interop/openrpc_validate.mjs DOCUMENT.json
//
// Prints `valid` and exits 0, or prints the validator's errors on stderr and exits 1.

import { readFileSync } from 'node:fs';
import { validateOpenRPCDocument } from '@open-rpc/schema-utils-js';

const [path] = process.argv.slice(2);
if (!path) {
  console.error('usage: node openrpc_validate.mjs <document.json>');
  process.exit(2);
}

const document = JSON.parse(readFileSync(path, 'utf8'));
const valid = validateOpenRPCDocument(document);
if (valid === true) {
  console.log('valid');
  process.exit(0);
}
console.error(valid.message ?? String(valid));
process.exit(1);

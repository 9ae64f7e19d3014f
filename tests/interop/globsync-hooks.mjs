// Resolve hook: `fs` or `node:fs` imported by the conformance suite's modules resolves to
// fs-globsync.mjs (which says why). That module imports `node:fs` itself from outside the suite,
// so the hook does not loop.
const shim = new URL('./fs-globsync.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (
    (specifier === 'fs' || specifier === 'node:fs') &&
    context.parentURL?.includes('/@modelcontextprotocol/conformance/')
  ) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}

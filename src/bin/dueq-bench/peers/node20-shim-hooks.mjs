const SHIM = new URL('./node20-fs-promises.mjs', import.meta.url).href
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs/promises' || specifier === 'node:fs/promises') &&
      context.parentURL && context.parentURL.includes('/@boringnode/queue/')) {
    return { url: SHIM, shortCircuit: true }
  }
  return next(specifier, context)
}

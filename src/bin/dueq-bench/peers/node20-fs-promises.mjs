export * from 'node:fs/promises'
import fsp from 'node:fs/promises'
export default fsp
export async function* glob(pattern) {
  throw new Error(`fs/promises.glob unavailable on Node ${process.version} (${pattern})`)
}

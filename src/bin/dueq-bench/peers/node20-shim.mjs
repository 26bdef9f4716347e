import { register } from 'node:module'
import fsp from 'node:fs/promises'
if (typeof fsp.glob !== 'function') {
  register('./node20-shim-hooks.mjs', import.meta.url)
}

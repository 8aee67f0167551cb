import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface Asset {
  body: Uint8Array<ArrayBuffer>
  contentType: string
}

export interface AssetSet {
  /** Content hash of every asset together: the URL segment that makes them immutable. */
  hash: string
  files: ReadonlyMap<string, Asset>
  /** Bare specifiers the page's import map points at vendor files. */
  imports: Readonly<Record<string, string>>
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

/** The UI's libraries, served from the installed packages (no CDN): specifier → file name. */
const VENDOR: ReadonlyArray<[specifier: string, file: string, locate: () => string]> = [
  ['preact', 'vendor/preact.mjs', () => packageFile('preact')],
  ['preact/hooks', 'vendor/preact-hooks.mjs', () => packageFile('preact/hooks')],
  // htm's `require` entry is CommonJS; its ES module sits beside it.
  ['htm', 'vendor/htm.mjs', () => join(dirname(packageFile('htm')), 'htm.mjs')],
]

const require = createRequire(import.meta.url)
const packageFile = (specifier: string): string => require.resolve(specifier)

const contentType = (name: string) =>
  CONTENT_TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream'

let loaded: AssetSet | undefined

/**
 * Reads the UI's files (`ui/` beside this module, in the sources and in `dist`) and its vendor
 * libraries once per process. Every file is served under one hash of all of them, so relative
 * imports between modules keep working and a new version never mixes with a cached old one.
 */
export function loadAssets(): AssetSet {
  if (loaded) return loaded
  const files = new Map<string, Asset>()
  const uiDir = fileURLToPath(new URL('./ui/', import.meta.url))
  for (const name of readdirSync(uiDir).sort()) {
    if (!(name.slice(name.lastIndexOf('.')) in CONTENT_TYPES)) continue
    files.set(name, {
      body: new Uint8Array(readFileSync(join(uiDir, name))),
      contentType: contentType(name),
    })
  }
  const imports: Record<string, string> = {}
  for (const [specifier, file, locate] of VENDOR) {
    files.set(file, {
      body: new Uint8Array(readFileSync(locate())),
      contentType: contentType(file),
    })
    imports[specifier] = file
  }
  const digest = createHash('sha256')
  for (const [name, asset] of files) digest.update(name).update(asset.body)
  loaded = { hash: digest.digest('hex').slice(0, 16), files, imports }
  return loaded
}

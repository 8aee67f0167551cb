#!/usr/bin/env node
// `npm run build` (and `prepack`, so `npm pack` and `npm publish` always ship a fresh dist):
// empties dist first, so a source file deleted since the last build is not published.
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'

rmSync('dist', { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const { status } = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
})
process.exit(status ?? 1)

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
if (status !== 0) process.exit(status ?? 1)
// The debugger's browser files are served from dist as they are (no build step of their own).
const copy = spawnSync(process.execPath, ['scripts/copy-debugger-ui.mjs'], { stdio: 'inherit' })
process.exit(copy.status ?? 1)

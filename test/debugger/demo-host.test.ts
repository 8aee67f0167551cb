// `npm start` (examples/demo-host.ts) mounts the debugger and prints its URL first.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'skein-demo-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the demo host', () => {
  it('prints the debugger URL on its first line, and serves the debugger there', {
    timeout: 60_000,
  }, async () => {
    const child = spawn(
      process.execPath,
      ['--conditions=skein-source', '--import', 'tsx', 'examples/demo-host.ts'],
      {
        cwd: root,
        env: { ...process.env, PORT: '0', SKEIN_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    const firstLines = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        out += chunk
        if (out.includes('Skein demo host on')) resolve(out)
      })
      child.on('exit', (code) => reject(new Error(`demo host exited ${code}: ${out}`)))
    })
    const [first] = firstLines.split('\n')
    expect(first).toMatch(/^Debugger: http:\/\/127\.0\.0\.1:\d+\/_skein\/$/)
    const page = await fetch(first.slice('Debugger: '.length))
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app"></div>')
    const exited = new Promise((resolve) => child.on('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })
})

// `npm start` (examples/demo-host.ts) mounts the debugger and prints its URL first.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { childWithin, ended, exitWithin } from '../support/children.js'

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
    // A failed try leaves no host serving on the directory behind for its retry.
    onTestFinished(() => {
      if (!ended(child)) child.kill('SIGKILL')
    })
    let out = ''
    let err = ''
    child.stderr.on('data', (chunk) => (err += chunk))
    const host = { name: 'the demo host', proc: child, output: () => `${out}\n${err}` }
    const firstLines = await childWithin(
      'the demo host to serve',
      host,
      new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          out += chunk
          if (out.includes('Skein demo host on')) resolve(out)
        })
        child.on('exit', (code) => reject(new Error(`demo host exited ${code}: ${out}${err}`)))
      }),
      40_000,
    )
    const [first] = firstLines.split('\n')
    expect(first).toMatch(/^Debugger: http:\/\/127\.0\.0\.1:\d+\/_skein\/$/)
    const page = await fetch(first.slice('Debugger: '.length))
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app"></div>')
    child.kill('SIGTERM')
    await exitWithin(host, 15_000)
  })
})

import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }

async function cli(argv: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  })
  return { code, stdout, stderr }
}

describe('skein --version', () => {
  it("prints package.json's version and exits 0", async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect(await cli(['-V'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
  })

  it('is listed in the help', async () => {
    const { code, stdout } = await cli(['--help'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/-V, --version\s+print the version/)
  })
})

// Every ```ts block of README.md and docs/*.md is a complete program: this test runs each one
// as written and type-checks them all strictly. A ```ts fragment (an excerpt) is type-checked
// with the names it leaves undefined allowed.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import {
  type CodeBlock,
  codeBlocks,
  documentationFiles,
  isProgram,
  isTypeScript,
} from './code-blocks.js'

const run = promisify(execFile)
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const vitest = join(
  dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
  'vitest.mjs',
)

// Inside the repository, so `skein` resolves to the package itself (its source, with the
// skein-source condition); each program runs in an empty directory of its own.
const work = mkdtempSync(join(process.cwd(), '.snippets-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

const blocks = documentationFiles().flatMap(codeBlocks).filter(isTypeScript)
const programs = blocks.filter(isProgram)
const where = (block: CodeBlock) => `${block.file}:${block.line}`
const fileOf = (block: CodeBlock) =>
  join(work, `${basename(block.file, '.md').toLowerCase()}-${block.line}.ts`)

// A fragment is a module with names it leaves to its context.
const allowedInFragments = new Set([
  'TS2304', // Cannot find name
  'TS2552', // Cannot find name; did you mean
  'TS7005', // Variable implicitly has an any type (an undefined name's)
  'TS7006', // Parameter implicitly has an any type (a callback given to an undefined name)
  'TS7031', // Binding element implicitly has an any type (likewise, destructured)
])

describe('documentation code blocks', () => {
  it('are found (README.md and docs/*.md have ts programs)', () => {
    expect(programs.map((b) => b.file)).toContain('README.md')
  })

  for (const block of programs) {
    it.concurrent(`${where(block)} runs as written`, async () => {
      const file = fileOf(block)
      writeFileSync(file, block.code)
      const cwd = mkdtempSync(join(tmpdir(), 'skein-snippet-'))
      try {
        if (block.flags.includes('vitest')) {
          // A ```ts vitest block is a test file: vitest runs it, as the app's own tests would.
          const test = file.replace(/\.ts$/, '.test.ts')
          writeFileSync(test, block.code)
          const config = join(work, 'vitest.config.mts')
          writeFileSync(
            config,
            "export default { resolve: { conditions: ['skein-source'] }, ssr: { resolve: { conditions: ['skein-source'] } } }\n",
          )
          await run(process.execPath, [vitest, 'run', '--config', config, '--root', work, test], {
            cwd: work,
            timeout: 60_000,
          })
          return
        }
        await run(process.execPath, ['--conditions=skein-source', '--import', tsx, file], {
          cwd,
          timeout: 60_000,
        })
      } catch (error) {
        const { stderr, stdout } = error as { stderr?: string; stdout?: string }
        throw new Error(`${where(block)} failed:\n${stderr || stdout || String(error)}`)
      } finally {
        rmSync(cwd, { recursive: true, force: true })
      }
    }, 90_000)
  }

  it('type-check with strict and noUncheckedIndexedAccess', async () => {
    const byFile = new Map<string, CodeBlock>()
    for (const block of blocks) {
      const file = fileOf(block)
      byFile.set(basename(file), block)
      writeFileSync(file, isProgram(block) ? block.code : `${block.code}\nexport {}\n`)
    }
    writeFileSync(
      join(work, 'tsconfig.json'),
      JSON.stringify({
        extends: '../tsconfig.json',
        compilerOptions: { noUncheckedIndexedAccess: true, noEmit: true, rootDir: '..' },
        include: ['*.ts'],
      }),
    )
    const output = await run(process.execPath, [tsc, '-p', work, '--pretty', 'false'], {
      timeout: 120_000,
    }).then(
      (ok) => ok.stdout,
      (failed: { stdout?: string }) => failed.stdout ?? String(failed),
    )
    const problems: string[] = []
    for (const text of output.split('\n')) {
      const m = /^(.+\.ts)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(text.trim())
      if (!m) continue
      // Errors in the package's own source belong to npm run typecheck, not to the docs.
      const path = resolve(m[1] ?? '')
      const block = dirname(path) === work ? byFile.get(basename(path)) : undefined
      if (!block) continue
      if (!isProgram(block) && allowedInFragments.has(m[3] ?? '')) continue
      problems.push(`${block.file}:${block.line + Number(m[2])}: ${m[3]} ${m[4]}`)
    }
    // A run that printed no diagnostics at all must still have checked the blocks.
    expect(output).not.toMatch(/error TS(5\d\d\d|6\d\d\d)/)
    expect(problems).toEqual([])
  }, 150_000)
})

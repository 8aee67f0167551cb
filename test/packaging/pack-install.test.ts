// The package as a user gets it: packed from a clean tree (the files git tracks, nothing
// built), installed into a scratch app from the tarball, type-checked there the way a fresh
// TypeScript 6 app checks it (strict, nodenext, no @types/node, skipLibCheck: false), and
// run with plain node: the README's quickstart, its first ten lines, every subpath, the bin.
import { execFile } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { codeBlocks } from '../docs/code-blocks.js'

const exec = promisify(execFile)
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const repo = process.cwd()
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }

const root = mkdtempSync(join(tmpdir(), 'skein-pack-'))
const tree = join(root, 'tree')
const app = join(root, 'app')
afterAll(() => rmSync(root, { recursive: true, force: true }))

const run = async (cmd: string, args: string[], cwd: string, timeout = 180_000) => {
  try {
    return await exec(cmd, args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024 })
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string }
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${stderr}\n${stdout}`)
  }
}

/** tsc over a project; resolves with its diagnostics (it exits non-zero when there are some). */
const typecheck = (project: string) =>
  exec(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: app }).then(
    () => '',
    (failed: { stdout?: string }) => failed.stdout ?? String(failed),
  )

const readmeBlock = (heading: string): string => {
  const readme = readFileSync('README.md', 'utf8').split('\n')
  const start = readme.indexOf(heading)
  const block = codeBlocks('README.md').find((b) => b.lang === 'ts' && b.line > start)
  if (start < 0 || !block) throw new Error(`README.md has no ts block under ${heading}`)
  return block.code
}

const seconds: Record<string, number> = {}
const timed = async <T>(step: string, work: () => Promise<T>): Promise<T> => {
  const started = performance.now()
  try {
    return await work()
  } finally {
    seconds[step] = Math.round(performance.now() - started) / 1000
  }
}

beforeAll(async () => {
  await timed('pack', async () => {
    const { stdout } = await run('git', ['ls-files', '-z'], repo)
    for (const file of stdout.split('\0').filter(Boolean)) {
      if (!existsSync(file) || file.startsWith('test/packaging/app/')) continue
      mkdirSync(dirname(join(tree, file)), { recursive: true })
      copyFileSync(file, join(tree, file))
    }
    // Dependencies only; no dist, no build output: `npm pack` must build it (prepack).
    symlinkSync(join(repo, 'node_modules'), join(tree, 'node_modules'), 'dir')
    await run(npm, ['pack', '--pack-destination', root, '--no-audit', '--no-fund'], tree)
  })
  const tarball = readdirSync(root).find((name) => name.endsWith('.tgz'))
  if (!tarball) throw new Error('npm pack wrote no tarball')

  await timed('install', async () => {
    mkdirSync(app)
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }),
    )
    await run(
      npm,
      ['install', join(root, tarball), '--prefer-offline', '--no-audit', '--no-fund'],
      app,
    )
    // better-sqlite3 is an optional peer the app adds; linking the repository's compiled copy
    // spares a native build (its own dependencies resolve next to its real path).
    symlinkSync(
      join(repo, 'node_modules', 'better-sqlite3'),
      join(app, 'node_modules', 'better-sqlite3'),
      'dir',
    )
  })

  for (const file of ['consumer.ts', 'must-fail.ts']) {
    copyFileSync(join(repo, 'test/packaging/app', file), join(app, file))
  }
  writeFileSync(join(app, 'quickstart.ts'), readmeBlock('## Quickstart'))
  writeFileSync(join(app, 'first-ten.ts'), readmeBlock('## Use it in your app'))
  const compilerOptions = {
    target: 'es2023',
    module: 'nodenext',
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    moduleDetection: 'force',
    noUncheckedSideEffectImports: true,
    skipLibCheck: false,
    rootDir: '.',
    outDir: 'out',
  }
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions, include: ['consumer.ts', 'quickstart.ts', 'first-ten.ts'] }),
  )
  writeFileSync(
    join(app, 'tsconfig.fail.json'),
    JSON.stringify({
      compilerOptions: { ...compilerOptions, noEmit: true },
      include: ['must-fail.ts'],
    }),
  )
}, 300_000)

afterAll(() => console.log(`SCORE pack_install seconds=${JSON.stringify(seconds)}`))

describe('the packed package in a fresh app', () => {
  it('ships dist, the LICENSE and the bin, and no sources or tests', () => {
    const installed = join(app, 'node_modules', 'skein')
    expect(existsSync(join(installed, 'dist/index.js'))).toBe(true)
    expect(existsSync(join(installed, 'dist/index.d.ts'))).toBe(true)
    expect(existsSync(join(installed, 'dist/cli/bin.js'))).toBe(true)
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('MIT License')
    expect(existsSync(join(installed, 'src'))).toBe(false)
    expect(existsSync(join(installed, 'test'))).toBe(false)
  })

  it('type-checks an app using every subpath, with no @types/node and skipLibCheck false', async () => {
    const diagnostics = await timed('tsc', () => typecheck('tsconfig.json'))
    expect(diagnostics).toBe('')
  })

  it('refuses exactly the lines that must not compile', async () => {
    const diagnostics = await typecheck('tsconfig.fail.json')
    const reported = new Set(
      [...diagnostics.matchAll(/^must-fail\.ts\((\d+),\d+\): error/gm)].map((m) => Number(m[1])),
    )
    const marked = readFileSync(join(app, 'must-fail.ts'), 'utf8')
      .split('\n')
      .flatMap((line, i) => (line.endsWith('// expect-error') ? [i + 1] : []))
    expect(marked.length).toBeGreaterThan(5)
    expect(
      [...reported].sort((a, b) => a - b),
      diagnostics,
    ).toEqual(marked)
    // Only must-fail.ts: the package's own declarations raised nothing.
    const elsewhere = diagnostics
      .split('\n')
      .filter((line) => /^\S.*\(\d+,\d+\): error/.test(line) && !line.startsWith('must-fail.ts'))
    expect(elsewhere).toEqual([])
  })

  it('runs the README quickstart and the first ten lines with plain node, and every subpath', async () => {
    await timed('node', async () => {
      const quickstart = await run(process.execPath, ['out/quickstart.js'], app, 60_000)
      expect(quickstart.stdout).toMatch(/^running → completed \{/)
      const firstTen = await run(process.execPath, ['out/first-ten.js'], app, 60_000)
      expect(firstTen.stdout).toContain("completed { hello: 'Hello, Ada' }")
      expect(existsSync(join(app, '.skein/runs.db'))).toBe(true)
      const consumer = await run(process.execPath, ['out/consumer.js'], app, 60_000)
      expect(JSON.parse(consumer.stdout)).toEqual({
        status: 'completed',
        output: { route: 'auto', receipt: 'r-500' },
        charges: 1,
        answer: { text: 'A1 is in stock.' },
        injected: 'STORE_ERROR',
        contracts: 'ERR_MODULE_NOT_FOUND', // skein/testing/vitest needs vitest; skein/testing did not
        options: { largePayloadBytes: 1024 },
        actorListing: 200,
      })
    })
  })

  it('installs the skein bin, which prints the version', async () => {
    const { stdout } = await run(resolve(app, 'node_modules/.bin/skein'), ['--version'], app)
    expect(stdout.trim()).toBe(version)
  })
})

#!/usr/bin/env node
// `npm test`: lint, type-check, then every vitest suite; ends with a plain
// "N passed, N failed" line that CI reads (vitest's own summary is not recognised).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'

const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit', shell: false }).status ?? 1
const bin = (name) => `node_modules/.bin/${name}`
const report = '.vitest-report.json'

const steps = [
  ['lint', bin('biome'), ['check', '.']],
  ['typecheck', bin('tsc'), ['-p', 'tsconfig.json', '--noEmit']],
]
let failedSteps = 0
for (const [name, cmd, args] of steps) {
  console.log(`\n> ${name}`)
  if (run(cmd, args) !== 0) {
    console.error(`${name} failed`)
    failedSteps++
  }
}

rmSync(report, { force: true })
console.log('\n> vitest')
const extra = process.argv.slice(2)
const vitestStatus = run(bin('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...extra,
])

let passed = 0
let failed = 0
let skipped = 0
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, 'utf8'))
  passed = json.numPassedTests ?? 0
  failed =
    (json.numFailedTests ?? 0) + (json.numFailedTestSuites ?? 0) * (json.numFailedTests ? 0 : 1)
  skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0)
  // A test that failed, then passed when retried (vitest.config.ts, `retry`): named, never hidden.
  const retried = json.testResults.flatMap((file) =>
    file.assertionResults
      .filter((t) => t.status === 'passed' && t.failureMessages.length > 0)
      .map(
        (t) =>
          `${file.name.replace(`${process.cwd()}/`, '')} > ${t.fullName}\n    first try: ${t.failureMessages[0].split('\n')[0]}`,
      ),
  )
  if (retried.length > 0) {
    console.log(`\npassed only when retried (${retried.length}):\n  ${retried.join('\n  ')}`)
  }
} else {
  failed = 1
}
failed += failedSteps
if (vitestStatus !== 0 && failed === 0) failed = 1
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed === 0 ? 0 : 1)

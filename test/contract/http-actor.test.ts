import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createActorHost, NOT_SUPPORTED_ROUTES } from 'skein/actor'
import { describeHttpHost } from 'skein/testing/vitest'
import { afterAll } from 'vitest'

// The HTTP host contract on the actor host, in process and over 127.0.0.1: the
// embed route suite, with the declared differences (queues, schedules, restore and the drift
// report: 501; runs are listed from the run registry).
const differences = { notSupported: [...NOT_SUPPORTED_ROUTES] }

describeHttpHost('actor host, memory cells', (setup) => createActorHost(setup), { differences })

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describeHttpHost(
  'actor host, one SQLite file per run',
  (setup) => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-actor-contract-'))
    dirs.push(dir)
    return createActorHost({ ...setup, dir })
  },
  { differences },
)

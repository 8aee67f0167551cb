import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { childWithin } from '../support/children.js'

const CHILD = join(import.meta.dirname, 'actor-child.ts')

export interface ActorChild {
  proc: ChildProcess
  /** The host's URL once it serves. */
  url: Promise<string>
  exit: Promise<number | null>
  output(): { out: string; err: string }
  kill(signal: NodeJS.Signals): Promise<number | null>
}

/** Spawns an actor host process over `dir` (see actor-child.ts). */
export function spawnActorHost(dir: string, idleMs = 1000, lockWaitMs = 1000): ActorChild {
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      CHILD,
      dir,
      String(idleMs),
      String(lockWaitMs),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stderr?.on('data', (d) => (err += d))
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  const url = childWithin(
    'the actor host ready',
    { name: 'the actor host', proc, output: () => `${out}\n${err}` },
    new Promise<string>((resolve, reject) => {
      proc.stdout?.on('data', (d) => {
        out += d
        const m = /ready (\S+)/.exec(out)
        if (m) resolve(m[1])
      })
      void exit.then(() => reject(new Error(`actor host exited before ready: ${err}`)))
    }),
    60_000,
  )
  url.catch(() => {})
  return {
    proc,
    url,
    exit,
    output: () => ({ out, err }),
    async kill(signal) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      return exit
    },
  }
}

/** Runs `fn` over `items`, `concurrency` at a time. */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>) {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++] as T)
    }),
  )
}

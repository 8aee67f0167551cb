// Waits on spawned child processes that end with a message, never a silent hang: each wait
// fails at once when a child it depends on exits (naming it, its exit and the tail of its
// output) and past a stage deadline well under the test's timeout (naming the stage and what
// was seen). The deadlines only end a hung wait; nothing asserts on a duration (decisions.md,
// "A wait on a child process in a test names the child and the stage; a retried test starts
// clean").
import type { ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'

/** A child a wait depends on: its name in messages, and everything it printed so far. */
export interface Child {
  name: string
  proc: ChildProcess
  output(): string
}

/** The last `chars` characters of `text`. */
export const tail = (text: string, chars = 3000): string =>
  text.length > chars ? `…${text.slice(-chars)}` : text

/** How `proc` ended ('exited with code 1', 'was killed by SIGKILL'), or undefined while it runs. */
export function ended(proc: ChildProcess): string | undefined {
  if (proc.signalCode !== null) return `was killed by ${proc.signalCode}`
  if (proc.exitCode !== null) return `exited with code ${proc.exitCode}`
  return undefined
}

/** Resolves once `proc` has exited, at once if it already has ('exit' never fires again). */
export function exitOf(proc: ChildProcess): Promise<void> {
  if (ended(proc)) return Promise.resolve()
  return new Promise((resolve) => proc.once('exit', () => resolve()))
}

/** One child's line for a failure message: how it ended (or that it runs) and its output tail. */
export const described = (child: Child): string =>
  `${child.name} (pid ${child.proc.pid}) ${ended(child.proc) ?? 'is still running'}; its output ends:\n${tail(child.output())}`

/**
 * Polls `check` until it is true. Throws naming `what` once one of `children` has ended, or
 * after `withinMs` (with `seen()`, what the wait saw last).
 */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  {
    children = [],
    withinMs = 60_000,
    seen,
  }: { children?: readonly Child[]; withinMs?: number; seen?: () => string } = {},
): Promise<void> {
  const end = Date.now() + withinMs
  for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
    if (await check()) return
    const gone = children.find((c) => ended(c.proc))
    if (gone) {
      // Its last output may still be in the pipe when 'exit' fires: one more look.
      await sleep(200)
      if (await check()) return
      throw new Error(`waiting for ${what}: ${described(gone)}`)
    }
    if (Date.now() > end) {
      const saw = seen ? `; seen: ${seen()}` : ''
      const running = children.map((c) => `\n${described(c)}`).join('')
      throw new Error(`${what}: not within ${withinMs} ms${saw}${running}`)
    }
    await sleep(pause)
  }
}

/** `promise`'s outcome, or an Error naming `what` (and `seen()`) once `withinMs` passed. */
export async function within<T>(
  what: string,
  promise: Promise<T>,
  withinMs: number,
  seen?: () => string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`${what}: not within ${withinMs} ms${seen ? `; seen: ${seen()}` : ''}`)),
      withinMs,
    )
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * `promise` (a stage of `child`: a line it prints, its exit); past `withinMs` the child is
 * killed (SIGKILL, so it does not outlive the test) and an Error names `what`, the child and
 * its output tail.
 */
export async function childWithin<T>(
  what: string,
  child: Child,
  promise: Promise<T>,
  withinMs: number,
): Promise<T> {
  try {
    return await within(what, promise, withinMs, () => described(child))
  } catch (error) {
    if (!ended(child.proc)) child.proc.kill('SIGKILL')
    throw error
  }
}

/** Waits for `child` to exit (`childWithin`); resolves with its exit code and signal. */
export async function exitWithin(
  child: Child,
  withinMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  await childWithin(`${child.name} to exit`, child, exitOf(child.proc), withinMs)
  return { code: child.proc.exitCode, signal: child.proc.signalCode }
}

/** A host child once it serves: the url it printed, and its output as a `Child` for waits. */
export interface ServedHost {
  url: string
  watched: Child
  /** What it printed on stdout so far. */
  stdout(): string
  /** Resolves once it exits. */
  exited: Promise<void>
}

/**
 * Waits for a host child to print `READY <url>` (within `withinMs`; it is killed past it) and
 * fails naming it and its output if it exits first. With `verbose` its stderr is echoed, each
 * chunk prefixed with `[name]`.
 */
export async function servedHost(
  name: string,
  proc: ChildProcess,
  { verbose = false, withinMs = 60_000 }: { verbose?: boolean; withinMs?: number } = {},
): Promise<ServedHost> {
  let out = ''
  let err = ''
  proc.stderr?.on('data', (chunk) => {
    err += chunk
    if (verbose) process.stderr.write(`[${name}] ${chunk}`)
  })
  const exited = exitOf(proc)
  const watched: Child = { name: `host ${name}`, proc, output: () => `${out}\n${err}` }
  const url = await childWithin(
    `host ${name} to serve`,
    watched,
    new Promise<string>((resolve, reject) => {
      proc.stdout?.on('data', (chunk) => {
        out += chunk
        const match = /READY (\S+)/.exec(out)
        if (match) resolve(match[1] as string)
      })
      void exited.then(() =>
        reject(new Error(`waiting for host ${name} to serve: ${described(watched)}`)),
      )
    }),
    withinMs,
  )
  return { url, watched, stdout: () => out, exited }
}

/** Kills every child in `children` (emptying it) and waits for their exits: a try's `afterEach`. */
export async function endChildren(children: ChildProcess[]): Promise<void> {
  const ending = children.splice(0)
  for (const child of ending) if (!ended(child)) child.kill('SIGKILL')
  await Promise.all(ending.map(exitOf))
}

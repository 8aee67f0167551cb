import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Clock, Ids } from '../core/ports.js'
import { newRunId } from '../core/uuid.js'

/** The real clock: wall time and Node timers (unref'd so they never keep a process alive). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const handle = setTimeout(callback, Math.max(0, Math.min(ms, 2_147_483_647)))
    handle.unref?.()
    return handle
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout)
  },
}

/**
 * Ids: a random per-engine prefix plus a counter, so ids are unique across processes and
 * cheap to make. Run ids are version-7 UUIDs (random, users see and share them, and time-ordered so stores index new runs at the end).
 */
export function defaultIds(): Ids {
  const prefix = randomBytes(6).toString('base64url')
  let counter = 0
  const next = (tag: string) => `${tag}_${prefix}${(counter++).toString(36)}`
  return {
    runId: () => newRunId(Date.now()),
    threadId: () => next('thr'),
    eventId: () => next('evt'),
    effectId: () => next('eff'),
    waitId: () => next('wait'),
    timerId: () => next('tmr'),
  }
}

/** A default owner id: this host, this process and a random part (two engines in one process differ). */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
}

/**
 * Whether a default owner id names a process on this host that no longer exists (killed,
 * crashed): its leases need not be waited out. Other hosts' owners are never judged here.
 */
export function ownerGone(owner: string): boolean {
  const [host, pidText] = owner.split(':')
  const pid = Number(pidText)
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException)?.code === 'ESRCH'
  }
}

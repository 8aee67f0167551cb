import { createConnection } from 'node:net'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { it } from 'vitest'

/** The test NATS server with JetStream (the machine runs one at 127.0.0.1:4222). */
export const NATS_URL = process.env.SKEIN_NATS_URL ?? '127.0.0.1:4222'

async function reachable(): Promise<string | undefined> {
  const [host, port] = NATS_URL.replace(/^nats:\/\//, '').split(':')
  const open = await new Promise<boolean>((resolve) => {
    const socket = createConnection({ host, port: Number(port ?? 4222) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(3000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
  if (!open) return `nothing listens at ${NATS_URL}`
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 3000 })
    try {
      await (await jetstreamManager(nc)).getAccountInfo()
    } finally {
      await nc.close()
    }
    return undefined
  } catch (error) {
    return `NATS at ${NATS_URL} has no JetStream (${(error as Error).message})`
  }
}

const whyNot = await reachable()

/**
 * Whether this file's NATS tests can run. When they cannot, it says so loudly: a line on stderr
 * and a skipped test named after the reason (never a silent pass).
 */
export function natsAvailable(file: string): boolean {
  if (whyNot === undefined) return true
  console.warn(`\n*** NATS TESTS SKIPPED in ${file}: ${whyNot} ***\n`)
  it.skip(`nats tests skipped: ${whyNot}`, () => {})
  return false
}

/** A stream name no other test (or engineer) uses; delete it with `deleteStream`. */
export function streamName(label: string): string {
  return `skein_test_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}

export async function deleteStreams(names: readonly string[]): Promise<void> {
  if (names.length === 0) return
  const nc = await connect({ servers: NATS_URL })
  try {
    const jsm = await jetstreamManager(nc)
    for (const name of names) await jsm.streams.delete(name).catch(() => false)
  } finally {
    await nc.close()
  }
}

/** How many messages the stream holds (duplicates dropped by JetStream are not counted). */
export async function streamMessages(name: string): Promise<number> {
  const nc = await connect({ servers: NATS_URL })
  try {
    return (await (await jetstreamManager(nc)).streams.info(name)).state.messages
  } finally {
    await nc.close()
  }
}

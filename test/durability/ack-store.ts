import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs'
import type { EventStore } from 'skein'

/**
 * Wraps a store so every acknowledged append is written to a side file and fsynced before
 * the engine sees the acknowledgement: one line `runId seq eventId` per event.
 */
export function ackingStore(inner: EventStore, ackPath: string): EventStore {
  const fd = openSync(ackPath, 'a')
  return {
    ...inner,
    append: async (runId, events, options) => {
      await inner.append(runId, events, options)
      if (events.length === 0) return
      writeSync(fd, events.map((e) => `${runId} ${e.seq} ${e.id}\n`).join(''))
      fsyncSync(fd)
    },
    close: async () => {
      closeSync(fd)
      await inner.close?.()
    },
  }
}

export interface Ack {
  runId: string
  seq: number
  id: string
}

/** Reads the acks; a torn last line (the kill landed mid-write) is not an ack. */
export function readAcks(ackPath: string): Ack[] {
  let text = ''
  try {
    text = readFileSync(ackPath, 'utf8')
  } catch {
    return []
  }
  const lines = text.split('\n')
  lines.pop() // '' after the final newline, or a torn line
  return lines.map((line) => {
    const [runId, seq, id] = line.split(' ')
    return { runId, seq: Number(seq), id }
  })
}

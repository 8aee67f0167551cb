// A process for feed-heap.test.ts, run with `node --expose-gc --conditions=skein-source --import
// tsx`: appends `count` events of `kb` KiB to one run of a SQLite store, with the projection
// feed watched or not (`watch` 1/0), and prints the heap after GC before and after as JSON.
import type { EventEnvelope } from 'skein'
import { sqliteStore } from 'skein/sqlite'

const [db, watchText, countText, kbText] = process.argv.slice(2)
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with --expose-gc')
const heap = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const store = sqliteStore({ path: db as string })
const unwatch = watchText === '1' ? store.feed?.watch(() => {}) : undefined
const before = heap()
const count = Number(countText)
const text = 'x'.repeat(Number(kbText) * 1024)
for (let seq = 1; seq <= count; seq++) {
  const event: EventEnvelope = {
    id: `evt-${seq}`,
    runId: 'big',
    seq,
    ts: Date.now(),
    type: 'test.big',
    // A fresh string per event, as a parsed request body would be.
    payload: { text: `${seq}${text}` },
    threadId: 'root',
    origin: 'external',
  }
  await store.append('big', [event], { expectedSeq: seq - 1 })
}
const after = heap()
unwatch?.()
const unwatched = heap()
await store.close()
process.stdout.write(`${JSON.stringify({ before, after, unwatched })}\n`)

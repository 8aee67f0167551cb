// The server side of sse-memory.test.ts, in its own process so its RSS is its own: one run on
// SQLite with many large events, served over HTTP. It samples its RSS every 10 ms and answers
// the parent over IPC: `mark` (collect garbage, take the baseline), `held` (RSS after collecting
// garbage), `peak` (the highest RSS since the mark), `stop`.
import { join } from 'node:path'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'

const [dir, eventsArg, bytesArg, drainArg] = process.argv.slice(2)
const events = Number(eventsArg)
const bytes = Number(bytesArg)

const hold = defineWorkflow({
  name: 'hold',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.never') } },
})

const store = sqliteStore({ path: join(dir, 'big.db'), synchronous: 'normal' })
const engine = createEngine({
  modules: [workflow({ definitions: [hold] })],
  store,
  http: { sse: { drainTimeoutMs: Number(drainArg) } },
})
await engine.start(hold, undefined, { runId: 'big' })
const blob = 'x'.repeat(bytes)
for (let i = 0; i < events; i += 10) {
  const batch = Array.from({ length: Math.min(10, events - i) }, (_, j) => ({
    type: 'app.blob',
    payload: { n: i + j, blob },
  }))
  await engine.signal('big', batch)
}
const tail = (await engine.getRun('big')).lastSeq
const server = await engine.serve({ port: 0 })

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})
const rss = () => process.memoryUsage().rss
let peak = rss()
setInterval(() => {
  peak = Math.max(peak, rss())
}, 10).unref()

const send = (message: unknown) => process.send?.(message)
process.on('message', async (message) => {
  if (message === 'mark') {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 200))
    gc()
    peak = rss()
    send({ base: peak })
  } else if (message === 'held') {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 100))
    gc()
    send({ held: rss() })
  } else if (message === 'peak') {
    send({ peak: Math.max(peak, rss()) })
  } else if (message === 'stop') {
    await server.close()
    await engine.stop()
    await store.close()
    process.exit(0)
  }
})
send({ url: server.url, tail })

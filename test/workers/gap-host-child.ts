// An engine host for the dispatch-gap proof (test/workers/dispatch-gap.test.ts). argv:
// <sqlite path | postgres schema> <mode>. `gap`: starts run `gap-1`, whose worker effect has no
// scheduleToStartMs, and kills itself (SIGKILL) in its store's first worker-task enqueue: the
// attempt's `dispatched` event is durable, its task never stored (the crash point lives here,
// in the test's wrapper of the store, not in src/). `serve`: a plain host printing `READY <url>`.
import {
  bearerAuth,
  createEngine,
  defineEffect,
  defineModule,
  type EventStore,
  httpWorkerQueue,
} from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'

const [where, mode] = process.argv.slice(2)
const pgUrl = process.env.SKEIN_PG_URL

const gapFx = defineModule({
  namespace: 'gap',
  // No scheduleToStartMs: without the boot's restore this attempt would wait for ever.
  effects: { work: defineEffect({ execution: 'worker' }) },
})
const job = defineWorkflow({
  name: 'gap-job',
  nodes: {
    work: { run: (ctx) => ctx.invoke('gap.work', { n: 21 }) },
    done: { after: ['work'], run: ({ results }) => ({ got: results.work }) },
  },
})

const opened: EventStore = where.endsWith('.db')
  ? sqliteStore({ path: where })
  : postgresStore({ connectionString: pgUrl ?? '' }, { schema: where, maxConnections: 4 })

/** The store, with its worker-task enqueue replaced by a SIGKILL of this process. */
function killedInGap(store: EventStore): EventStore {
  const tasks = store.workerTasks
  if (!tasks) throw new Error('the store keeps no worker tasks')
  const dying = new Proxy(tasks, {
    get(target, key) {
      if (key === 'enqueue')
        return () => {
          process.kill(process.pid, 'SIGKILL')
          return new Promise(() => {})
        }
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return new Proxy(store, {
    get(target, key) {
      if (key === 'workerTasks') return dying
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

const engine = createEngine({
  store: mode === 'gap' ? killedInGap(opened) : opened,
  modules: [workflow({ definitions: [job] }), gapFx],
  worker: httpWorkerQueue({ pollMs: 200 }),
  authorize: bearerAuth({ worker: 'gap-worker', read: 'gap-read' }),
})
await engine.ready()
if (mode === 'gap') {
  process.stdout.write('STARTING\n')
  await engine.start(job, undefined, { runId: 'gap-1' })
  // Not reached: the dispatch's enqueue killed the process.
  process.stdout.write('SURVIVED\n')
  process.exit(3)
}
const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
process.stdout.write(`READY ${server.url}\n`)
process.on('SIGTERM', () => {
  engine.stop({ graceMs: 200 }).finally(() => process.exit(0))
})

// A worker process claiming from every host it is given (argv: <name> <url>...): prints
// `TASK <worker> <runId> <effectId> <attempt>` for each task it is handed, then completes it.
import { runHttpWorker } from 'skein'

const [name, ...urls] = process.argv.slice(2)
const workers = urls.map((url) =>
  runHttpWorker({
    url,
    token: 'proof-worker',
    types: ['pt.work'],
    concurrency: 4,
    waitMs: 1_000,
    async handle(task) {
      process.stdout.write(`TASK ${name} ${task.runId} ${task.effectId} ${task.attempt}\n`)
      await new Promise((r) => setTimeout(r, 30))
      return { by: name }
    },
    // A killed host refuses connections: that loop keeps trying, the others go on.
    onError: () => {},
  }),
)
process.stdout.write('READY\n')
process.on('SIGTERM', () => {
  Promise.all(workers.map((w) => w.stop())).finally(() => process.exit(0))
})

// A worker in its own process: claims tasks over HTTP with a worker token and runs them.
// argv: url token [heartbeat]
import { runHttpWorker, TerminalError } from 'skein'

const [url, token] = process.argv.slice(2)
const worker = runHttpWorker({
  url,
  token,
  types: ['w.plain', 'w.timed'],
  waitMs: 2_000,
  withEvents: true,
  async handle(task, ctx) {
    const input = task.input as { n: number; mode?: string }
    if (input.mode === 'terminal') throw new TerminalError('refused by the worker')
    if (input.mode === 'wait-cancel') {
      while (!ctx.signal.aborted) {
        await ctx.heartbeat()
        await new Promise((r) => setTimeout(r, 20))
      }
      throw ctx.signal.reason
    }
    return {
      result: { doubled: input.n * 2, pid: process.pid },
      events: [{ type: 'w.shipped', payload: { id: `ship-${task.effectId}` } }],
    }
  },
  onError: (error) => process.stderr.write(`worker error: ${String(error)}\n`),
})
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  worker.stop().then(() => process.exit(0))
})

// One bench worker process: `runHttpWorker` doubling `input.n`, for bench/worker.ts and
// bench/worker-ab.ts. It imports nothing of Skein itself, so worker-ab.ts can point each child
// at the build it measures.
import { type ChildProcess, spawn } from 'node:child_process'

/** The token the bench's engines give the `worker` access level. */
export const WORKER_TOKEN = 'bench-worker-token-0123456789'

const code = (skein: string) => `
import { runHttpWorker } from ${JSON.stringify(skein)}
const [url, token, concurrency] = process.argv.slice(1)
const worker = runHttpWorker({ url, token, concurrency: Number(concurrency), waitMs: 5000,
  handle: (task) => ({ doubled: task.input.n * 2 }) })
process.stdout.write('ready\\n')
process.on('SIGTERM', () => worker.stop().then(() => process.exit(0)))
`

/**
 * Starts a worker process claiming from `url` with `concurrency` loops; resolves once it runs.
 * `skein`: the module it imports `runHttpWorker` from; `execArgv`: its Node flags (the
 * parent's, so both run the same Skein, unless the module is a file URL of a build).
 */
export function spawnWorker(
  url: string,
  concurrency: number,
  {
    skein = 'skein',
    execArgv = [] as string[],
    cwd,
  }: { skein?: string; execArgv?: string[]; cwd?: string } = {},
): Promise<ChildProcess> {
  const proc = spawn(
    process.execPath,
    [...execArgv, '--input-type=module', '-e', code(skein), url, WORKER_TOKEN, String(concurrency)],
    { cwd, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d) => String(d).includes('ready') && resolve(proc))
    proc.on('exit', (code) => reject(new Error(`bench worker exited with ${code}`)))
  })
}

// Throughput of 1, 2 and 3 host processes on one Postgres database: each host runs
// the 3-step workflow 16 at a time on the same schema; the figure is all hosts' runs over the
// wall time from a common start to the last host's end, a median over interleaved rounds. CPU
// seconds per 1,000 runs, of the hosts and of their Postgres backends, say where the limit is
// on this machine (2 cores shared by hosts and server).
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median, printRows, type Row } from './table.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const APP = `skein_bench_hosts_${process.pid}`
const SCHEMA = 'bench_hosts'
const RUNS_PER_HOST = 600
const CONCURRENCY = 16
const ROUNDS = 3
const HOSTS = [1, 2, 3]

async function pgClient() {
  const pg = (await import('pg')).default
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  return client
}

/** CPU ms of the Postgres backends serving this bench (by application_name), from /proc. */
async function backendCpuMs(
  client: Awaited<ReturnType<typeof pgClient>>,
): Promise<Map<number, number>> {
  const { rows } = await client.query(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
    [APP],
  )
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      // utime and stime are fields 14 and 15 (1-based), in clock ticks (100 per second).
      cpu.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / 100)
    } catch {
      // A backend that ended, or a server on another machine: not counted.
    }
  }
  return cpu
}

interface Child {
  proc: ChildProcess
  next(): Promise<string>
}

function startChild(): Child {
  const script = fileURLToPath(new URL('./postgres-hosts-child.ts', import.meta.url))
  const sep = PG_URL.includes('?') ? '&' : '?'
  const url = `${PG_URL}${sep}application_name=${APP}`
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      script,
      url,
      SCHEMA,
      String(RUNS_PER_HOST),
      String(CONCURRENCY),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  let buffer = ''
  const waiting: Array<(line: string) => void> = []
  const lines: string[] = []
  proc.stdout?.on('data', (chunk) => {
    buffer += chunk
    let cut = buffer.indexOf('\n')
    while (cut >= 0) {
      const line = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 1)
      const w = waiting.shift()
      if (w) w(line)
      else lines.push(line)
      cut = buffer.indexOf('\n')
    }
  })
  return {
    proc,
    next: () =>
      new Promise((resolve, reject) => {
        const line = lines.shift()
        if (line !== undefined) return resolve(line)
        waiting.push(resolve)
        proc.once('exit', (code) => reject(new Error(`bench host exited ${code}`)))
      }),
  }
}

/** One round with `n` hosts: aggregate runs/s and CPU ms per run (hosts, Postgres). */
async function round(n: number) {
  const admin = await pgClient()
  await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`)
  const children: Child[] = []
  try {
    // One at a time to ready (the first migrates), then all start together.
    for (let i = 0; i < n; i++) {
      const child = startChild()
      children.push(child)
      if ((await child.next()) !== 'ready') throw new Error('bench host did not get ready')
    }
    const before = await backendCpuMs(admin)
    const t0 = performance.now()
    for (const c of children) c.proc.stdin?.write('go\n')
    const results = await Promise.all(children.map(async (c) => JSON.parse(await c.next())))
    const wall = performance.now() - t0
    const after = await backendCpuMs(admin)
    let pgMs = 0
    for (const [pid, ms] of after) pgMs += ms - (before.get(pid) ?? 0)
    const runs = results.reduce((s, r) => s + r.runs, 0)
    const hostMs = results.reduce((s, r) => s + r.cpuMs, 0)
    return { rate: runs / (wall / 1000), hostCpu: hostMs / runs, pgCpu: pgMs / runs, wall }
  } finally {
    for (const c of children) c.proc.stdin?.write('exit\n')
    await Promise.all(
      children.map(
        (c) =>
          new Promise((resolve) =>
            c.proc.exitCode !== null ? resolve(null) : c.proc.once('exit', resolve),
          ),
      ),
    )
    await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`)
    await admin.end()
  }
}

export async function benchPostgresHosts(): Promise<Row[]> {
  try {
    const client = await pgClient()
    await client.end()
  } catch {
    console.log(`skipped: no Postgres reachable at ${PG_URL} (set SKEIN_PG_URL)`)
    return []
  }
  const figures = new Map<number, Array<Awaited<ReturnType<typeof round>>>>()
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of HOSTS) figures.set(n, [...(figures.get(n) ?? []), await round(n)])
  }
  const rate = (n: number) => median(figures.get(n)!.map((f) => f.rate))
  const cpu = (n: number, k: 'hostCpu' | 'pgCpu') => median(figures.get(n)!.map((f) => f[k]))
  return HOSTS.map((n) => ({
    name: `3-step workflow, ${n} host process${n > 1 ? 'es' : ''} × ${CONCURRENCY} concurrent on one database`,
    value: rate(n),
    unit: 'runs/s',
    baseline: rate(1),
    ratio: rate(n) / rate(1),
    // CPU ms per run is CPU seconds per 1,000 runs.
    note: `CPU s per 1,000 runs: hosts ${cpu(n, 'hostCpu').toFixed(2)}, Postgres backends ${cpu(n, 'pgCpu').toFixed(2)}; median of ${ROUNDS} rounds, ${RUNS_PER_HOST} runs per host`,
  }))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('many hosts on postgres', await benchPostgresHosts())
}

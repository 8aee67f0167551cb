// An actor host in its own process for the restore kill proof: the restore test's definitions,
// operations open to every caller, serving on 127.0.0.1 (a free port) over `dir`; prints
// `ready <url>`. Spawned with `--conditions=skein-source --import tsx`; killed with SIGKILL.
import { createActorHost } from 'skein/actor'
import { restoreModules } from './actor-restore-workload.js'

const [dir] = process.argv.slice(2)
const host = createActorHost({ modules: restoreModules(), dir, authorize: () => true })
const server = await host.serve({ port: 0, hostname: '127.0.0.1' })
await host.recovered
process.stdout.write(`ready ${server.url}\n`)

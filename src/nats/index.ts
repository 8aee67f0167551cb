// `skein/nats`: replication of the log to a NATS JetStream stream (docs/replication.md).
// Needs the optional peer dependencies `@nats-io/transport-node` and `@nats-io/jetstream`.

export { type NatsArchiveOptions, natsArchive, readNatsArchive } from './nats-archive.js'
export {
  type NatsReplica,
  type NatsReplicaOptions,
  type NatsStreamOptions,
  natsReplica,
  readReplicatedLog,
  readReplicatedLogs,
  runSubject,
} from './nats-replica.js'

/**
 * Point reads of many runs made in the same loop turn, answered by one statement: what many
 * runs falling due together do (each wake loads its run), one round trip instead of one per run
 * (decisions.md, "A due wake reads what it folds, once"). A turn with a single read runs it
 * alone (`one`), as before; with several, `many` answers them in chunks of at most `max`.
 */
export class ReadBatcher<K, V> {
  private pending: Array<{
    key: K
    resolve: (value: V) => void
    reject: (error: unknown) => void
  }> = []

  constructor(
    private readonly one: (key: K) => Promise<V>,
    /** The answers to `keys`, in their order. */
    private readonly many: (keys: readonly K[]) => Promise<V[]>,
    private readonly max = 256,
  ) {}

  load(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (this.pending.push({ key, resolve, reject }) === 1) setImmediate(() => this.flush())
    })
  }

  private flush(): void {
    const batch = this.pending
    this.pending = []
    if (batch.length === 1) {
      const [only] = batch
      this.one(only.key).then(only.resolve, only.reject)
      return
    }
    for (let i = 0; i < batch.length; i += this.max) {
      const chunk = batch.slice(i, i + this.max)
      this.many(chunk.map((r) => r.key)).then(
        (values) => {
          for (let j = 0; j < chunk.length; j++) chunk[j].resolve(values[j])
        },
        (error) => {
          for (const r of chunk) r.reject(error)
        },
      )
    }
  }
}

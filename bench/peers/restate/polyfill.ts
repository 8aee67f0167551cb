// Restate's TypeScript SDK 1.17 calls `Promise.withResolvers`, which Node 22 has and Node 20
// (the oldest Node Skein supports) does not: the same few lines Node's own implementation
// amounts to, loaded before the SDK.
const promise = Promise as unknown as { withResolvers?: () => unknown }
promise.withResolvers ??= <T>() => {
  let resolve!: (value: T | PromiseLike<T>) => void
  let reject!: (reason?: unknown) => void
  const p = new Promise<T>((yes, no) => {
    resolve = yes
    reject = no
  })
  return { promise: p, resolve, reject }
}

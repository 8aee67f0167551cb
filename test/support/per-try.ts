// Names (run ids, keys) for what a test writes on a host or store its file shares across tests,
// new on each call: a retried test must not meet its first try's runs (decisions.md, "A wait on
// a child process in a test names the child and the stage; a retried test starts clean").
let made = 0

/** `name` with a suffix new on each call in this file: `review` → `review-1`, then `review-2`. */
export const perTry = (name: string): string => `${name}-${++made}`

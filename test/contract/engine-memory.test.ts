import { memoryStore } from 'skein'
import { describeEngine } from 'skein/testing/vitest'

// The whole-engine contract on the memory store (a restart reuses the same store object).
describeEngine('memory', () => memoryStore())

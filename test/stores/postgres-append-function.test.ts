import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  appendFunction,
  appendFunctionNullSafe,
  appendFunctionWithLeases,
} from '../../src/stores/postgres/append-function.js'
import { appendFunctionSetBased } from '../../src/stores/postgres/append-function-sets.js'

// Migrations 1 and 3 of the Postgres store generate `skein_append` from one text
// (src/stores/postgres/append-function.ts). A shipped migration must never change: every
// database upgrades through it. The digests below are of the SQL each generated when it
// shipped, comments and spacing aside; a change to the shared text that touches either one
// fails here (write a new migration instead).

const sql = (text: string) =>
  text
    .split('\n')
    .map((line) => line.replace(/--.*$/, '').trim().replace(/\s+/g, ' '))
    .filter(Boolean)
    .join('\n')
const digest = (text: string) => createHash('sha256').update(sql(text)).digest('hex')

describe('skein_append as shipped', () => {
  it('migration 1 generates the function it shipped with', () => {
    expect(digest(appendFunction('"sch"'))).toBe(MIGRATION_1)
  })

  it('migration 3 generates the function it shipped with (leases, notifications)', () => {
    expect(digest(appendFunctionWithLeases('"sch"', 'chan'))).toBe(MIGRATION_3)
  })

  it('migration 5 generates the function it shipped with (a null-safe renewal check)', () => {
    const v5 = appendFunctionNullSafe('"sch"', 'chan')
    expect(digest(v5)).toBe(MIGRATION_5)
    expect(v5).toMatch(/^\s*CREATE OR REPLACE FUNCTION "sch"\.skein_append\(/)
    expect(v5).toContain('coalesce(l_owners[j] = p_lease_owner[i]')
  })

  it('migration 17 generates the function it shipped with (set-based, migration 5 kept)', () => {
    const v17 = appendFunctionSetBased('"sch"', 'chan')
    expect(digest(v17)).toBe(MIGRATION_17)
    expect(v17).toMatch(/RENAME TO skein_append_each;\s*CREATE FUNCTION "sch"\.skein_append\(/)
  })

  it('only migrations 3 and 5 check leases and notify', () => {
    expect(sql(appendFunction('"sch"'))).not.toMatch(/lease|pg_notify|DROP FUNCTION/)
    const v3 = appendFunctionWithLeases('"sch"', 'chan')
    expect(v3).toMatch(/^\s*DROP FUNCTION "sch"\.skein_append\(/)
    expect(v3.match(/pg_notify\('chan'/g)).toHaveLength(2)
  })
})

const MIGRATION_1 = '0ba7e446acbe6a72520f0c51573d48f47f384ba1d1a486955c27932dd132b197'
const MIGRATION_3 = '495c8c1735363801eb3233c355a5dc978e8c8c37adb278034025a2f7964e3164'
const MIGRATION_5 = '224400e7727a8ae4ccf861b1116f6937bf96da2c6368b2ee9e6a05664c0d10bf'
const MIGRATION_17 = '3c9edd356087e84c849fe8c4c394e4bab3c9c9a6bd765d9d1a865c0ddc64fdb2'

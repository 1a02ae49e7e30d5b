import { sql } from 'kysely';
import { newId } from '../platform/ids.js';
import type { Storage } from '../storage/database.js';

export interface CreditTotals {
  grantedNanos: number;
  usedNanos: number;
}

/**
 * The account's credits: an append-only ledger of grants (initial credits, `switchyard credits add`)
 * and usage (written by generations). Totals are sums, so concurrent writers never lose an update.
 */
export function createCreditLedger(storage: Storage) {
  const { db } = storage;
  return {
    async grant(options: { nanos: number; note: string; at: Date }): Promise<void> {
      await db
        .insertInto('credit_ledger')
        .values({
          id: newId(),
          kind: 'grant',
          amount_nanos: options.nanos,
          note: options.note,
          created_at: options.at.toISOString(),
        })
        .execute();
    },

    async recordUsage(options: { nanos: number; note: string | null; at: Date }): Promise<void> {
      await db
        .insertInto('credit_ledger')
        .values({
          id: newId(),
          kind: 'usage',
          amount_nanos: options.nanos,
          note: options.note,
          created_at: options.at.toISOString(),
        })
        .execute();
    },

    async totals(): Promise<CreditTotals> {
      const rows = await db
        .selectFrom('credit_ledger')
        .select(['kind', sql<number>`sum(amount_nanos)`.as('total')])
        .groupBy('kind')
        .execute();
      const totals: CreditTotals = { grantedNanos: 0, usedNanos: 0 };
      for (const row of rows) {
        if (row.kind === 'grant') totals.grantedNanos = Number(row.total);
        else totals.usedNanos = Number(row.total);
      }
      return totals;
    },
  };
}

export type CreditLedger = ReturnType<typeof createCreditLedger>;

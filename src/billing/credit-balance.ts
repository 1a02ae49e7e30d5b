import type { CreditLedger, CreditTotals } from './credit-ledger.js';

/** How often the account's totals are re-read, so grants made elsewhere (the CLI) take effect. */
const REFRESH_MS = 10_000;

/**
 * The account's credits as the hot path reads them: totals from the ledger, loaded at start and
 * refreshed in the background. Spending is guarded by the spend counters, which start from
 * `usedNanos` and add every settled generation, so a stale read here never lets a request overspend;
 * it only delays a fresh grant by up to the refresh interval.
 */
export async function createCreditBalance(ledger: CreditLedger, onError: (error: unknown) => void) {
  let totals: CreditTotals = await ledger.totals();
  let refreshing = false;
  const refresh = async () => {
    if (refreshing) return;
    refreshing = true;
    try {
      totals = await ledger.totals();
    } catch (error) {
      onError(error);
    } finally {
      refreshing = false;
    }
  };
  const timer = setInterval(refresh, REFRESH_MS);
  timer.unref();
  return {
    current: (): CreditTotals => totals,
    refresh,
    close: () => clearInterval(timer),
  };
}

export type CreditBalance = Awaited<ReturnType<typeof createCreditBalance>>;

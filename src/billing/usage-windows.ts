/**
 * Calendar windows in UTC: a day starts at midnight UTC, a week on Monday, a month on the 1st.
 * Usage is stored per UTC day, so each window is the sum of the days from its first day on.
 */
export type ResetInterval = 'daily' | 'weekly' | 'monthly';

let lastDayIndex = Number.NaN;
let lastDay = '';
/** The UTC calendar day of `at` (YYYY-MM-DD); the last answer is kept, as most calls ask for today. */
export function utcDay(at: Date): string {
  const index = Math.floor(at.getTime() / 86_400_000);
  if (index !== lastDayIndex) {
    lastDay = at.toISOString().slice(0, 10);
    lastDayIndex = index;
  }
  return lastDay;
}

export function windowStartDays(now: Date): { day: string; week: string; month: string } {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const daysSinceMonday = (now.getUTCDay() + 6) % 7;
  return {
    day: utcDay(now),
    week: utcDay(new Date(midnight - daysSinceMonday * 86_400_000)),
    month: utcDay(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))),
  };
}

/** When the window of `reset` that contains `now` ends (ms): next UTC midnight, next Monday, next 1st. */
export function windowEndsAt(reset: ResetInterval, now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  if (reset === 'daily') return midnight + 86_400_000;
  if (reset === 'weekly') return midnight + (7 - ((now.getUTCDay() + 6) % 7)) * 86_400_000;
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
}

/** The earliest day any window can reach back to: the start of this week or month. */
export function earliestWindowDay(now: Date): string {
  const { week, month } = windowStartDays(now);
  return week.localeCompare(month) < 0 ? week : month;
}

export interface UsageTotals {
  usage: number;
  daily: number;
  weekly: number;
  monthly: number;
}

export interface DailyAmount {
  day: string;
  nanos: number;
}

/** Sums the daily amounts into the four windows; `lifetime` is the all-time total kept apart. */
export function sumWindows(days: Iterable<DailyAmount>, lifetime: number, now: Date): UsageTotals {
  const start = windowStartDays(now);
  const totals: UsageTotals = { usage: lifetime, daily: 0, weekly: 0, monthly: 0 };
  for (const { day, nanos } of days) {
    if (day === start.day) totals.daily += nanos;
    if (day >= start.week && day <= start.day) totals.weekly += nanos;
    if (day >= start.month && day <= start.day) totals.monthly += nanos;
  }
  return totals;
}

import type { Detection } from '../content-filter-types.js';

/**
 * One detection per stretch of text when a detector has two ways to find the same thing (the
 * address regex and compromise, an IPv4 address inside an IPv6 one), so counts are not doubled.
 */
export function mergeDetections(detections: Detection[]): Detection[] {
  if (detections.length < 2) return detections;
  const ordered = [...detections].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Detection[] = [{ ...ordered[0]! }];
  for (const detection of ordered.slice(1)) {
    const last = merged[merged.length - 1]!;
    if (detection.start < last.end) last.end = Math.max(last.end, detection.end);
    else merged.push({ ...detection });
  }
  return merged;
}

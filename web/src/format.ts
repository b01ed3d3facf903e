// Number formatting in one place, so every page writes the same number the same way. The
// browser's locale decides separators; units live in column headers and labels.

const locale = undefined; // the viewer's

const fmtCache = new Map<string, Intl.NumberFormat>();
function nf(minFrac: number, maxFrac: number): Intl.NumberFormat {
  const key = `${minFrac}:${maxFrac}`;
  let f = fmtCache.get(key);
  if (!f) {
    f = new Intl.NumberFormat(locale, {
      minimumFractionDigits: minFrac,
      maximumFractionDigits: maxFrac,
    });
    fmtCache.set(key, f);
  }
  return f;
}

/** Milliseconds: 3 significant digits for small values, whole ms from 100 up. */
export function fmtMs(v: number): string {
  const a = Math.abs(v);
  if (a < 1) return nf(2, 3).format(v);
  if (a < 10) return nf(2, 2).format(v);
  if (a < 100) return nf(1, 1).format(v);
  return nf(0, 0).format(v);
}

/** Tokens per second, one decimal. */
export function fmtRate(v: number): string {
  return nf(1, 1).format(v);
}

/** A fraction as a percentage, two decimals (0.00405 -> "0.41%"). */
export function fmtPct(fraction: number): string {
  return `${nf(2, 2).format(fraction * 100)}%`;
}

/** A count with grouping. */
export function fmtCount(n: number): string {
  return nf(0, 0).format(n);
}

/** "n=1,234", the sample count shown with a number. */
export function fmtN(n: number): string {
  return `n=${fmtCount(n)}`;
}

/** Seconds since a moment, for "updated 5 s ago". */
export function fmtAgo(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

/** Milliseconds with the unit, for places without a column header ("281 ms"). */
export function fmtMsUnit(v: number): string {
  return `${fmtMs(v)} ms`;
}

/** A duration in seconds, to the unit that reads best ("0.42 s", "12.3 s", "4 min 12 s",
 *  "3 h 05 min"). */
export function fmtSeconds(v: number): string {
  if (v < 10) return `${nf(2, 2).format(v)} s`;
  if (v < 60) return `${nf(1, 1).format(v)} s`;
  const s = Math.round(v);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const m = Math.round(s / 60);
  return `${fmtCount(Math.floor(m / 60))} h ${String(m % 60).padStart(2, '0')} min`;
}

// Colour scales shared by the heatmap and the regions map.

// A sequential scale readable in both themes (dark blue, fast -> yellow, slow), after viridis.
export const kStops: Array<[number, number, number]> = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

export function colour(t: number): { bg: string; fg: string } {
  const x = Math.min(1, Math.max(0, t)) * (kStops.length - 1);
  const i = Math.min(kStops.length - 2, Math.floor(x));
  const f = x - i;
  const a = kStops[i]!;
  const b = kStops[i + 1]!;
  const c = a.map((v, k) => Math.round(v + (b[k]! - v) * f));
  const lum = (0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!) / 255;
  return { bg: `rgb(${c.join(' ')})`, fg: lum > 0.5 ? '#111' : '#fff' };
}

/** A log scale over the positive values: 0 at the smallest, 1 at the largest (a slow region at
 *  3x the median stands out without flattening the rest). */
export function logScale(values: readonly number[]): { at: (v: number) => number; lo: number; hi: number } {
  const vals = values.filter((v) => v > 0);
  if (vals.length === 0) return { at: () => 0, lo: 0, hi: 0 };
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  const a = Math.log(lo);
  const b = Math.log(hi);
  return { at: (v) => (b > a ? (Math.log(v) - a) / (b - a) : 0.5), lo, hi };
}

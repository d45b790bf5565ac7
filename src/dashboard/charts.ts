import { renderPartial } from './views.js';

/**
 * Bar charts drawn on the server as SVG (no script, no library): each bar carries its value
 * (`data-value`, and a `<title>` a pointer shows), and each chart is followed by the same figures
 * as a table, for screen readers and for anyone who would rather read numbers.
 */

export interface Bar {
  label: string;
  value: number;
}

const WIDTH = 320;
const HEIGHT = 120;
const GAP = 2;
const AXIS = 14;

export function barChart(input: {
  id: string;
  title: string;
  unit: string;
  bars: readonly Bar[];
  labelHeading: string;
}): string {
  const max = Math.max(1, ...input.bars.map((b) => b.value));
  const count = Math.max(1, input.bars.length);
  const slot = WIDTH / count;
  const plot = HEIGHT - AXIS;
  const bars = input.bars.map((b, i) => {
    const h = Math.round((b.value / max) * (plot - 4));
    return {
      ...b,
      x: (i * slot + GAP / 2).toFixed(1),
      w: Math.max(1, slot - GAP).toFixed(1),
      y: plot - h,
      h,
      // Every label on a short axis; on a long one, about six.
      tick: count <= 8 || i % Math.ceil(count / 6) === 0 || i === count - 1,
      tx: (i * slot + slot / 2).toFixed(1),
    };
  });
  const total = input.bars.reduce((sum, b) => sum + b.value, 0);
  return renderPartial('bar-chart', { ...input, bars, max, total, width: WIDTH, height: HEIGHT, plot });
}

/** Horizontal bars, one per row (a funnel, failure reasons), with the table beside. */
export function rowChart(input: { id: string; title: string; rows: readonly Bar[]; labelHeading: string }): string {
  const max = Math.max(1, ...input.rows.map((r) => r.value));
  const rows = input.rows.map((r, i) => ({
    ...r,
    y: i * 36,
    w: Math.round((r.value / max) * 260),
    // A long reason is cut in the drawing; the table has it whole.
    short: r.label.length > 48 ? `${r.label.slice(0, 47)}…` : r.label,
  }));
  return renderPartial('row-chart', { ...input, rows, height: Math.max(36, rows.length * 36) });
}

export const dayLabel = (ms: number) => new Date(ms).toISOString().slice(5, 10);
export const hourLabel = (ms: number) => new Date(ms).toISOString().slice(5, 16).replace('T', ' ');

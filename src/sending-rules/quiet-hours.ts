/** Quiet hours: a daily window of local time (it may cross midnight) in an IANA time zone. */

export interface QuietHours {
  /** `HH:MM`, 24-hour. */
  start: string;
  end: string;
  timeZone: string;
}

const HH_MM = /^([01]\d|2[0-3]):([0-5]\d)$/;

export const minutesOf = (hhmm: string): number | undefined => {
  const m = HH_MM.exec(hhmm);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
};

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return name.length > 0;
  } catch {
    return false;
  }
}

/** Minutes since local midnight, and the seconds and ms within the minute, at `ms` in `timeZone`. */
function localTime(ms: number, timeZone: string): { minute: number; intoMinuteMs: number } {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(ms));
  const hour = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === 'minute')?.value ?? 0);
  return { minute: hour * 60 + minute, intoMinuteMs: ms % 60_000 };
}

/**
 * When the quiet hours holding `now` end (ms), or undefined when `now` is outside them. The end is
 * read again when the delivery wakes (a change of offset in between, daylight saving, is then
 * caught: it waits again if still inside).
 */
export function quietUntil(quiet: QuietHours, now: number): number | undefined {
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  if (start === undefined || end === undefined || start === end) return undefined;
  const { minute, intoMinuteMs } = localTime(now, quiet.timeZone);
  const inside = start < end ? minute >= start && minute < end : minute >= start || minute < end;
  if (!inside) return undefined;
  const left = (end - minute + 1440) % 1440;
  return now - intoMinuteMs + left * 60_000;
}

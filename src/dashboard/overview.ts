import { orgOverview } from '../analytics/analytics.service.js';
import type { AppContext } from '../context.js';
import { barChart, dayLabel, rowChart } from './charts.js';
import type { Session } from './session.service.js';
import { renderPartial } from './views.js';

/** The home page's overview: the organization's last 7 or 30 days, per day, as charts with tables. */

const CHARTS = [
  ['sent', 'Messages sent'],
  ['delivered', 'Messages delivered'],
  ['read', 'Messages read'],
  ['failed', 'Messages failed'],
  ['received', 'Messages received'],
  ['conversations', 'Conversations started'],
  ['handoffs', 'Handoffs to people'],
  ['optouts', 'Opt-outs'],
] as const;

export async function overviewSection(
  ctx: Pick<AppContext, 'db' | 'clock'>,
  session: Session,
  days: 7 | 30,
): Promise<string> {
  const overview = await orgOverview(ctx.db, session.org.id, days, ctx.clock.now());
  const charts = CHARTS.map(([metric, title]) =>
    barChart({
      id: `chart-${metric}`,
      title,
      unit:
        metric === 'conversations'
          ? 'conversations'
          : metric === 'handoffs'
            ? 'handoffs'
            : metric === 'optouts'
              ? 'opt-outs'
              : 'messages',
      labelHeading: 'Day (UTC)',
      bars: overview.days.map((d) => ({ label: dayLabel(d.start), value: d[metric] })),
    }),
  );
  const failures = rowChart({
    id: 'chart-failure-reasons',
    title: 'Top failure reasons',
    labelHeading: 'Reason',
    rows: overview.failures.map((f) => ({ label: f.reason, value: f.count })),
  });
  return renderPartial('overview', { days, charts, failures });
}

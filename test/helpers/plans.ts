import { CompiledQuery, type Kysely, type KyselyPlugin, type RootOperationNode } from 'kysely';
import type { DB } from '../../src/db/schema.js';
import type { TestDialect } from './app.js';

/**
 * The plans of the statements a repository or service runs, on either database: `capture` gives a
 * database handle that records each statement it runs (as compiled for that database), and
 * `planOf` asks the database how it runs one of them, with its own parameters.
 */

export function capture(db: Kysely<DB>): { db: Kysely<DB>; statements: CompiledQuery[] } {
  const statements: CompiledQuery[] = [];
  let n = 0;
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      statements.push(db.getExecutor().compileQuery(args.node as RootOperationNode, { queryId: `plan${n++}` }));
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  return { db: db.withPlugin(plugin), statements };
}

export interface Plan {
  /** Indexes the plan reads through, by name. */
  readonly indexes: string[];
  /** Whether the database sorts rows itself (the index did not give the order). */
  readonly sorts: boolean;
  /** Tables read whole, start to end. */
  readonly fullScans: string[];
  /** PostgreSQL only (EXPLAIN ANALYZE): rows read from each table, kept or dropped by a filter. */
  readonly rowsRead: Record<string, number>;
  readonly text: string;
}

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PgNode[];
}

function* nodesOf(node: PgNode): Generator<PgNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

export async function planOf(db: Kysely<DB>, dialect: TestDialect, statement: CompiledQuery): Promise<Plan> {
  if (dialect === 'sqlite') {
    const { rows } = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]),
    );
    const details = rows.map((r) => r.detail);
    return {
      indexes: details.flatMap((d) => /USING (?:COVERING )?INDEX (\S+)/.exec(d)?.[1] ?? []),
      sorts: details.some((d) => /USE TEMP B-TREE FOR (?:RIGHT PART OF )?ORDER BY/.test(d)),
      fullScans: details.flatMap((d) => /^SCAN (\S+)$/.exec(d)?.[1] ?? []),
      rowsRead: {},
      text: details.join('\n'),
    };
  }
  const { rows } = await db.executeQuery<{ 'QUERY PLAN': { Plan: PgNode }[] }>(
    CompiledQuery.raw(`explain (analyze, format json) ${statement.sql}`, [...statement.parameters]),
  );
  const root = rows[0]?.['QUERY PLAN'][0]?.Plan;
  if (!root) throw new Error('no plan');
  const nodes = [...nodesOf(root)];
  const rowsRead: Record<string, number> = {};
  for (const node of nodes) {
    const table = node['Relation Name'];
    if (table) {
      rowsRead[table] =
        (rowsRead[table] ?? 0) +
        (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) +
        (node['Rows Removed by Filter'] ?? 0);
    }
  }
  return {
    indexes: nodes.flatMap((n) => n['Index Name'] ?? []),
    sorts: nodes.some((n) => /Sort/.test(n['Node Type'])),
    fullScans: nodes.filter((n) => n['Node Type'] === 'Seq Scan').flatMap((n) => n['Relation Name'] ?? []),
    rowsRead,
    text: JSON.stringify(root),
  };
}

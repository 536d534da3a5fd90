import type { CommonQueryMethods, QuerySqlToken } from 'slonik';
import { z } from 'zod';

// What a statement did when it ran, node by node, for tests that check how PostgreSQL reads
// (which index, how many loops, which steps were skipped) rather than what it answers.

/** A node of an executed plan, as EXPLAIN (ANALYZE, FORMAT JSON) writes it (the fields tests read). */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const explainRow = z.object({ 'QUERY PLAN': z.array(z.object({ Plan: z.any() })) });

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

/** Runs the statement under EXPLAIN ANALYZE and returns every node of its plan, outermost first. */
export async function executedPlan(
  db: CommonQueryMethods,
  query: QuerySqlToken,
): Promise<PlanNode[]> {
  const row = await db.one({
    ...query,
    parser: explainRow,
    sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${query.sql}`,
  });
  return flatten(row['QUERY PLAN'][0]!.Plan as PlanNode);
}

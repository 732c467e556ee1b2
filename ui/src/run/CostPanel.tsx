import type { Event, RunView } from '../api';
import { formatCost, formatTokens } from '../format';
import { stageSpendText } from './StageDetail';

/** A `budget.warning` as the Cost tab lists it. */
interface BudgetLine {
  limit: string;
  spent: number;
  max: number;
  message: string;
}

/** The latest warning of each budget limit the run neared (docs/llm.md, "Budgets"). */
export function budgetLines(events: readonly Event[]): BudgetLine[] {
  const latest = new Map<string, BudgetLine>();
  for (const e of events) {
    if (e.event !== 'budget.warning') continue;
    const { limit, spent, max, message } = e.properties;
    latest.delete(limit);
    latest.set(limit, { limit, spent, max, message });
  }
  return [...latest.values()];
}

/**
 * What the run spent on models: its totals (what `weft cost` and the
 * Spending screen count), each stage's share, and the budget limits it
 * neared. Says so when nothing was recorded.
 */
export function CostPanel({ view, events, onSelectStage }: { view: RunView; events: readonly Event[]; onSelectStage: (node: string, visit: number) => void }) {
  const total = view.run.llm;
  const stages = view.stages.flatMap((s) => {
    const text = stageSpendText(s);
    return text ? [{ stage: s, text }] : [];
  });
  const budgets = budgetLines(events);
  if (!total && stages.length === 0 && budgets.length === 0) {
    return (
      <p className="muted" data-testid="cost-none">
        No model spend was recorded for this run: none of its stages called a language model.
      </p>
    );
  }
  return (
    <div className="cost" data-testid="cost-panel">
      {total && (
        <dl className="stage__facts" data-testid="cost-total">
          <div>
            <dt>Spent</dt>
            <dd>{formatCost(total)}</dd>
          </div>
          <div>
            <dt>Tokens</dt>
            <dd>
              {formatTokens(total.input_tokens)} in / {formatTokens(total.output_tokens)} out
            </dd>
          </div>
          <div>
            <dt>Calls</dt>
            <dd>{total.calls}</dd>
          </div>
        </dl>
      )}
      {budgets.length > 0 && (
        <ul className="cost__budgets" data-testid="cost-budgets">
          {budgets.map((b) => (
            <li key={b.limit}>
              ⚠ {b.message}{' '}
              <span className="muted">
                ({b.limit}: {b.spent} of {b.max})
              </span>
            </li>
          ))}
        </ul>
      )}
      {stages.length > 0 && (
        <table className="cost__stages" data-testid="cost-stages">
          <caption className="muted">By stage</caption>
          <tbody>
            {stages.map(({ stage, text }) => (
              <tr key={`${stage.node_id}@${stage.visit}`}>
                <th scope="row">
                  <button type="button" className="link" onClick={() => onSelectStage(stage.node_id, stage.visit)}>
                    {stage.node_id}
                    {stage.visit > 1 ? `@${stage.visit}` : ''}
                  </button>
                </th>
                <td className="run-mono">{text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** A delivery plan drawn as SVG: steps as boxes, transitions as arrows coloured by trigger, plus a text list. */
import { arr, str, type Json } from './api.js';
import { layoutPlan, STEP_HEIGHT, STEP_WIDTH, type PlanStep } from './plan-layout.js';

const TRIGGERS = ['Success', 'Failure', 'Always'] as const;

function stepDetail(s: Json): string {
  const targets = arr(s.targets);
  if (targets.length > 0) {
    const first = str(targets[0]!.service_id).replace(/^.*#/, '#');
    return targets.length === 1 ? `→ ${first}` : `→ ${first} +${targets.length - 1}`;
  }
  if (s.recipient_did !== undefined) return `to ${str(s.recipient_did).slice(0, 22)}…`;
  if (s.service_id !== undefined) return `call ${str(s.service_id).replace(/^.*#/, '#')}`;
  return '';
}

export function PlanGraph(props: { plan: Json; id: string; label: string }) {
  const steps: PlanStep[] = arr(props.plan.steps).map((s) => ({ id: str(s.id), operation: str(s.operation), detail: stepDetail(s) }));
  const transitions = arr(props.plan.transitions).map((t) => ({ from: str(t.from), to: str(t.to), trigger: str(t.trigger), mode: str(t.mode || 'Next') }));
  const entry = str(props.plan.entry_step);
  const g = layoutPlan(entry, steps, transitions);
  const titleId = `${props.id}-title`;
  const descId = `${props.id}-desc`;
  const desc =
    `Entry step ${entry}. Steps: ${steps.map((s) => `${s.id} (${s.operation})`).join(', ')}. ` +
    (transitions.length === 0 ? 'No transitions.' : `Transitions: ${transitions.map((t) => `${t.from} to ${t.to} on ${t.trigger}`).join('; ')}.`);
  return (
    <figure class="plan">
      <svg role="img" aria-labelledby={`${titleId} ${descId}`} viewBox={`0 0 ${g.width} ${g.height}`} width={g.width} height={g.height} class="plan-graph">
        <title id={titleId}>{props.label}</title>
        <desc id={descId}>{desc}</desc>
        <defs>
          {TRIGGERS.map((t) => (
            <marker key={t} id={`${props.id}-arrow-${t}`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" class={`arrow-${t}`} />
            </marker>
          ))}
        </defs>
        {g.transitions.map((t, i) => (
          <g key={`t${i}`} class={`transition trigger-${t.trigger}`}>
            <path d={t.path} fill="none" stroke-dasharray={t.mode === 'Fork' ? '6 4' : undefined} marker-end={`url(#${props.id}-arrow-${t.trigger})`} />
            <text x={t.labelX} y={t.labelY} text-anchor="middle">
              {t.trigger}
              {t.mode === 'Fork' ? ' (fork)' : ''}
            </text>
          </g>
        ))}
        {g.steps.map((s) => (
          <g key={s.id} class={`step op-${s.operation}${s.entry ? ' entry' : ''}`}>
            <rect x={s.x} y={s.y} width={STEP_WIDTH} height={STEP_HEIGHT} rx="8" />
            <text x={s.x + 12} y={s.y + 22} class="step-op">
              {s.entry ? '▶ ' : ''}
              {s.operation}
            </text>
            <text x={s.x + 12} y={s.y + 40} class="step-id">
              {s.id}
              {s.detail ? ` ${s.detail}` : ''}
            </text>
          </g>
        ))}
      </svg>
      <figcaption>{props.label}</figcaption>
    </figure>
  );
}

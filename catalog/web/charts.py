"""Usage charts as inline SVG drawn on the server: bars per period stacked by model, no script and nothing fetched.

Every label is escaped; colours are presentation attributes (a `style` attribute would need 'unsafe-inline' in the
page's Content-Security-Policy).
"""

from __future__ import annotations

import html

from sessdex.core.usage import UsageRow, UsageTotals, model_name

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
OTHER_COLOR = "#8c8c8c"
WIDTH, HEIGHT = 960, 320
LEFT, RIGHT, TOP, BOTTOM = 70, 10, 10, 60
MAX_MODELS = len(PALETTE)  # beyond this many models the smallest are drawn as one "other" segment


def metric_value(figures: UsageTotals, metric: str) -> float:
    """A row's (or a model's) figure: its cost in dollars, or its total tokens."""
    return float(figures.cost if metric == "cost" else figures.total_tokens)


def model_colors(rows: list[UsageRow], metric: str) -> dict[str, str]:
    """A colour for each model, the biggest overall first; models past the palette share the "other" colour."""
    sums: dict[str, float] = {}
    for row in rows:
        for model, figures in row.models.items():
            sums[model] = sums.get(model, 0.0) + metric_value(figures, metric)
    ordered = sorted(sums, key=lambda model: (-sums[model], model))
    return {model: PALETTE[index] if index < MAX_MODELS else OTHER_COLOR for index, model in enumerate(ordered)}


def _figure(value: float, metric: str) -> str:
    return f"${value:,.4f}" if metric == "cost" else f"{value:,.0f} tokens"


def stacked_bars(rows: list[UsageRow], metric: str, colors: dict[str, str]) -> str:
    """An SVG bar chart: one bar per row (oldest first), stacked by model, with a <title> on every segment."""
    top_value = max((metric_value(row.totals, metric) for row in rows), default=0.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [f'<svg class="sx-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" aria-label="{html.escape(metric)} per period, stacked by model">']
    parts.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
                 'stroke="currentColor" stroke-width="1"/>')
    for fraction in (0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="currentColor">'
                     f"{html.escape(_figure(top_value * fraction, metric))}</text>")
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="currentColor" '
                     'stroke-opacity="0.15"/>')
    if rows and top_value > 0:
        slot = plot_w / len(rows)
        bar = max(1.0, slot * 0.8)
        label_every = max(1, round(len(rows) / 12))
        for index, row in enumerate(rows):
            x = LEFT + index * slot + (slot - bar) / 2
            y = TOP + plot_h
            parts.append(f'<g class="sx-bar" data-key="{html.escape(row.key)}">')
            for model, figures in sorted(row.models.items(), key=lambda item: (-metric_value(item[1], metric),
                                                                               item[0])):
                value = metric_value(figures, metric)
                if value <= 0:
                    continue
                height = plot_h * value / top_value
                y -= height
                parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{height:.1f}" '
                             f'fill="{colors.get(model, OTHER_COLOR)}"><title>{html.escape(row.key)} · '
                             f"{html.escape(model_name(model))}: {html.escape(_figure(value, metric))}</title></rect>")
            parts.append("</g>")
            if index % label_every == 0:
                cx = LEFT + index * slot + slot / 2
                parts.append(f'<text x="{cx:.1f}" y="{TOP + plot_h + 14}" font-size="11" text-anchor="end" '
                             f'fill="currentColor" transform="rotate(-40 {cx:.1f} {TOP + plot_h + 14})">'
                             f"{html.escape(row.key)}</text>")
    parts.append("</svg>")
    return "".join(parts)

"""Report charts as self-contained SVG files (no plotting dependency; byte-stable for the same numbers).

This module only formats numbers it is given; it never reads the store.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2")


def bar_chart(
    title: str,
    categories: list[str],
    series: dict[str, list[float | None]],
    ymax: float = 1.0,
    ylabel: str = "",
    xlabel: str = "",
) -> str:
    """Grouped bars: one group per category, one bar per series; ``None`` draws no bar."""
    width = max(360, 70 + len(categories) * (18 * len(series) + 26), 60 + int(6.6 * len(title)))
    height, left, top, bottom = 290, 50, 52, 50
    plot_h = height - top - bottom
    group_w = (width - left - 20) / max(1, len(categories))
    bar_w = min(22.0, (group_w - 10) / max(1, len(series)))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<text x="{left}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for i in range(5):
        v = ymax * i / 4
        y = top + plot_h - plot_h * i / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
    if ylabel:
        out.append(
            f'<text x="12" y="{top + plot_h / 2:.1f}" transform="rotate(-90 12 {top + plot_h / 2:.1f})" '
            f'text-anchor="middle">{escape(ylabel)}</text>'
        )
    for g, cat in enumerate(categories):
        x0 = left + g * group_w + (group_w - bar_w * len(series)) / 2
        for s, (name, values) in enumerate(series.items()):
            value = values[g]
            if value is None:
                continue
            h = plot_h * max(0.0, min(value, ymax)) / ymax
            x = x0 + s * bar_w
            out.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[s % len(COLOURS)]}"><title>{escape(name)} {escape(cat)}: {value:.3f}</title></rect>'
            )
        out.append(
            f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
            f"{escape(cat)}</text>"
        )
    for s, name in enumerate(series):  # the legend: one row under the title
        x = left + 90 * s
        out.append(f'<rect x="{x}" y="27" width="10" height="10" fill="{COLOURS[s % len(COLOURS)]}"/>')
        out.append(f'<text x="{x + 14}" y="36">{escape(name)}</text>')
    if xlabel:
        out.append(
            f'<text x="{left + (width - left - 20) / 2:.1f}" y="{height - 8}" text-anchor="middle">'
            f"{escape(xlabel)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(path: Path, svg: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(svg, encoding="utf-8")
    return path

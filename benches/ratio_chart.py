"""The one SVG writer of the benchmarks: horizontal bars of ratios on a log
scale, each drawn from 1 to its ratio, grouped by row, with each bar's
target marked. Used by benches/llvm_comparison/compare.py (ours / LLVM, a
bar per clang release) and benches/mpi_remote/run.py (remote / MPI)."""

import math
from collections import namedtuple

# One bar: its ratio, its target (None: unmarked), fill colour and tooltip.
Bar = namedtuple("Bar", "ratio target color tip")


def write(path, title, groups, ticks, span, legend=(), bar=10, gap=8, left=260, width=420):
    """Write the chart of `groups` ([(label, [Bar, ...])]) to `path`.
    `span` is the (low, high) ratio range of the axis; `legend` lists
    (colour, text) pairs drawn at the bottom right."""
    height = 40 + sum(bar * len(bars) + gap for _, bars in groups) + 30
    lo, hi = math.log10(span[0]), math.log10(span[1])

    def x(r):
        return left + (math.log10(min(max(r, span[0]), span[1])) - lo) / (hi - lo) * width

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13">{title}</text>']
    for tick in ticks:
        out.append(f'<line x1="{x(tick):.1f}" y1="24" x2="{x(tick):.1f}" y2="{height - 24}" '
                   f'stroke="{"#000" if tick == 1 else "#ddd"}"/>')
        out.append(f'<text x="{x(tick):.1f}" y="{height - 10}" text-anchor="middle">{tick}</text>')
    y = 32
    for label, bars in groups:
        out.append(f'<text x="{left - 6}" y="{y + bar * len(bars) / 2 + 4:.0f}" '
                   f'text-anchor="end">{label}</text>')
        for b in bars:
            x0, x1 = sorted((x(1), x(b.ratio)))
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" '
                       f'height="{bar - 1}" fill="{b.color}"><title>{b.tip}</title></rect>')
            if b.target:
                out.append(f'<line x1="{x(b.target):.1f}" y1="{y - 1}" x2="{x(b.target):.1f}" '
                           f'y2="{y + bar}" stroke="#c00" stroke-width="2"/>')
            y += bar
        y += gap
    for i, (color, text) in enumerate(legend):
        out.append(f'<rect x="{left + width - 110 + i * 50}" y="{height - 22}" width="10" '
                   f'height="10" fill="{color}"/><text x="{left + width - 96 + i * 50}" '
                   f'y="{height - 13}">{text}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

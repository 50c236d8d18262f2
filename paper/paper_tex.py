"""LaTeX for the generated files: cells escaped (:func:`tex_escape`, :func:`code`), numbers formatted
(:func:`pct`, :func:`num`, :func:`count`, :func:`seconds`) and booktabs tables (:func:`tabular`)."""

from __future__ import annotations

from typing import Any, Iterable


def tex_escape(text: Any) -> str:
    r"""Text safe inside a LaTeX table cell.

    >>> tex_escape("kafka.rack_active 10% & more")
    'kafka.rack\\_active 10\\% \\& more'
    """
    out = str(text)
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                          ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
        out = out.replace(char, escaped)
    return out


def code(name: Any) -> str:
    return r"\texttt{" + tex_escape(name) + "}"


def pct(x: Any) -> str:
    return "--" if _missing(x) else f"{100 * float(x):.1f}\\%"


def num(x: Any, digits: int = 3) -> str:
    return "--" if _missing(x) else f"{float(x):.{digits}f}"


def count(x: Any) -> str:
    return "--" if _missing(x) else f"{int(x):,}".replace(",", "{,}")


def seconds(x: Any) -> str:
    """Seconds with three significant digits (times span five orders of magnitude)."""
    if _missing(x):
        return "--"
    value = float(x)
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}".replace(",", "{,}")


def _optimal_count(r: Any) -> int | None:
    """Runs at the optimum: the optimal share times the instances (None when no run was scored)."""
    return None if _missing(r.optimal_share) else round(r.optimal_share * r.instances)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def tabular(columns: str, header: Iterable[str], body: Iterable[Iterable[str]], groups: Iterable[int] = ()) -> str:
    """A booktabs ``tabular``; a ``\\midrule`` before each body row index in ``groups``."""
    breaks = set(groups)
    lines = [r"\begin{tabular}{" + columns + "}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    for i, row in enumerate(body):
        if i in breaks and i:
            lines.append(r"\midrule")
        lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def _groups(keys: list[Any]) -> list[int]:
    return [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]

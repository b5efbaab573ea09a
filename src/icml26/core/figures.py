"""Figures without global state: matplotlib's object API, no backend switch, no pyplot.

Every experiment makes its figures through :func:`subplots`, which builds a
:class:`matplotlib.figure.Figure` that pyplot does not track. Nothing here calls
``matplotlib.use``, so importing a method never changes a notebook user's backend, and a
figure is garbage once nobody holds it (no ``plt.close`` bookkeeping).

Examples
--------
>>> fig, ax = subplots(figsize=(3, 2))
>>> _ = ax.plot([0, 1], [1, 0])
>>> import io; buf = io.BytesIO(); fig.savefig(buf, format="png"); buf.getvalue()[:4]
b'\\x89PNG'
"""

from __future__ import annotations

__all__ = ["subplots"]


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """``(figure, axes)`` like :func:`matplotlib.pyplot.subplots`, but outside pyplot.

    Keyword arguments go to :class:`~matplotlib.figure.Figure` (``figsize``, ``dpi``,
    ``layout``) or to :meth:`~matplotlib.figure.Figure.subplots` (``sharex``, ``sharey``,
    ``squeeze``, ``subplot_kw``, ``gridspec_kw``, ``width_ratios``, ``height_ratios``).
    """
    from matplotlib.figure import Figure

    grid_keys = {"sharex", "sharey", "squeeze", "subplot_kw", "gridspec_kw", "width_ratios",
                 "height_ratios"}
    grid = {k: kwargs.pop(k) for k in list(kwargs) if k in grid_keys}
    fig = Figure(**kwargs)
    return fig, fig.subplots(nrows, ncols, **grid)

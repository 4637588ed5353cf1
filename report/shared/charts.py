"""What every study's chart shares: matplotlib without a display (Agg), one panel's labels, and one way to write a
chart. A study's chart is a function of its own module (race, path) -> path or None, declared in its CHARTS
(tables.Chart); report/catalog.py collects them."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401 (the studies draw with it: charts.plt)


def axes(ax, xlabel, ylabel, title=None, yscale="log", legend=8):
    """One panel's labels, scale and legend (legend: its font size, or None for none)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_yscale(yscale)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=legend)


def save(fig, path, title=None):
    """Every chart ends alike: its title, laid out, written at one resolution, closed (pyplot keeps figures open)."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

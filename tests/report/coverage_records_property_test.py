"""Property: whatever a race's coverage record holds (walls of any value or type, `measured` of any value, lines copied),
the trend's reader either leaves the race out with its folder and reason, or fails the cell with its reason, or makes
a point whose figure comes from walls that can be times: never a traceback, never a figure from a bad value
(report/shared/races.py check_validation_lines, report/shared/figures.py implausible)."""

import json
import math
import shutil
import statistics
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from report import catalog
from report.history import races, series
from report.shared.figures import LEAST_WALL_MS, PLAUSIBLE_WALL_MS
from report.shared.races import Files
from runners.contracts import records
from tests.report.history_races_test import CELL, race_folder, write_race

WALLS = st.one_of(
    st.floats(min_value=1.0, max_value=2000.0),  # plausible
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e-6, 0.049, 1e12, True, None]),
    st.text(max_size=4),
)
MEASURED = st.one_of(st.just(True), st.sampled_from([False, None, "false", "true", 1, 0]))
LINES = st.lists(st.tuples(WALLS, MEASURED), min_size=1, max_size=10)


def plausible(wall):
    return isinstance(wall, (int, float)) and not isinstance(wall, bool) and LEAST_WALL_MS <= wall <= PLAUSIBLE_WALL_MS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES, st.booleans())
def test_a_coverage_record_is_named_or_read_into_a_figure_of_times_alone(lines, copied):
    home = Path(tempfile.mkdtemp(prefix="coverage-records-"))
    try:
        write_race(home, "r01", "20261101T120000Z")
        path = race_folder(home, "r01") / records.RECORD_DIR / records.VALIDATION
        written = [{"task": CELL, "measured": m, "wall-ms": w, "window": [i, i + 1]} for i, (w, m) in enumerate(lines)]
        text = "".join(json.dumps(line) + "\n" for line in written)
        path.write_text(text * 2 if copied else text)
        found = races.select(races.Selection(), Files(home))
        measured = [line for line in written if line["measured"] is True]
        left_out = dict(found.left_out)
        if not found.races:
            (why,) = left_out.values()
            # a bad measured value, or a copied answered line: the race is named with the reason
            assert "measured is" in why or ("a copied line" in why and copied and measured), (why, written)
            return
        assert not copied or not measured
        assert all(line["measured"] in (True, False, None) for line in written)
        (built,) = series.build(found.races, catalog.TREND_FIGURES)
        walls = [line["wall-ms"] for line in measured]
        points = built.cells.get(CELL, [])
        if all(plausible(w) for w in walls) and walls:
            (point,) = points
            assert math.isclose(point.median, statistics.median(walls)), (point, walls)
        else:
            # a cell with a wall that cannot be a time (or none measured) is no point, and says why
            assert not points and built.excluded, (built.excluded, walls)
            assert all(isinstance(why, str) and why for _, _, why in built.excluded)
    finally:
        shutil.rmtree(home)

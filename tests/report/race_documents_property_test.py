"""Property: whatever a race.json holds, the history's reader either names why the race is malformed or reads it
without a traceback, however it is selected; a document it accepts has every field it reads in the type Rally
writes (report/history/races.py, malformed)."""

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from report.history import races

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
TIMESTAMPS = st.one_of(
    JSON, st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)).map(lambda d: d.strftime(races.RALLY_TIMESTAMP))
)
KEYS = ("race-id", "race-timestamp", "track", "challenge", "cluster", "user-tags", "track-params", "rally-version")
DOCUMENTS = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "race-id": st.one_of(JSON, st.text(min_size=1, max_size=8)),
            "race-timestamp": TIMESTAMPS,
            "track": st.one_of(JSON, st.just("cluster-metrics")),
            "challenge": st.one_of(JSON, st.just("production-comparison")),
            "cluster": st.one_of(JSON, st.fixed_dictionaries({}, optional={"distribution-version": st.one_of(JSON, st.just("8.17.2"))})),
            "user-tags": st.one_of(JSON, st.dictionaries(st.sampled_from(["env", "night"]), JSON, max_size=2)),
            "track-params": JSON,
            "rally-version": JSON,
        },
    ),
)
SELECTIONS = [
    races.Selection(),
    races.Selection(("production-comparison",), {"env": "nightly"}, "8.", datetime(2026, 1, 1, tzinfo=timezone.utc), None),
    races.Selection((), {"night": "2026-12-02"}, "9.5.3", None, datetime(2026, 12, 2, tzinfo=timezone.utc)),
]
NOW = datetime(2026, 12, 2, tzinfo=timezone.utc)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_a_race_document_is_named_malformed_or_read_without_a_traceback(data):
    why = races.malformed(data, now=NOW)
    if why is not None:
        assert isinstance(why, str) and why.startswith("race.json")
        return
    assert isinstance(data["race-id"], str) and races.timestamp(data) <= NOW + races.FUTURE_SLACK
    for key, kind in races.FIELD_TYPES.items():
        assert data.get(key) is None or isinstance(data[key], kind), key
    for selection in SELECTIONS:
        assert selection.why_not(data) is None or isinstance(selection.why_not(data), str)

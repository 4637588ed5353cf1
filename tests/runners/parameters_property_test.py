"""Property tests over the track parameters (Hypothesis): any value the parameter check accepts renders the track,
and the coverage validation accepts Elasticsearch's right answers for it, keyed as Elasticsearch keys them, and
still catches a wrong one. The next valid input the code never met is found here, not by a user."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmgen
from report.validation_proof import caught, keyed_answer, substitute
from runners.contracts import parameters, rules
from runners.shared.validation import NodeExpectation
from tests.conftest import rendered_challenges, rendered_tasks

# any percent Elasticsearch accepts, with the edges drawn often: 0, 100, and the tail-latency ones below 0.001 and
# above 99.999 whose keys Elasticsearch spells in scientific notation or with many digits
PERCENT = st.one_of(
    st.sampled_from([0, 100, 0.0005, 0.000125, 0.001, 99.9995, 99.99999, 50]),
    st.floats(min_value=0, max_value=100, allow_nan=False, allow_infinity=False),
)
PERCENTS = st.lists(PERCENT, min_size=1, max_size=12, unique_by=float)


@pytest.fixture(scope="module")
def truth():
    params = cmgen.Params(epochs=1, rows_per_epoch=3000, nodes=3, tasks=20, seed=5)
    columns = cmgen.epoch_columns(params, 1)
    return cmgen.ground_truth(columns, params.rows_per_epoch, params.nodes, params.tasks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(percents=PERCENTS, digits=st.integers(0, rules.MAX_HDR_DIGITS), variant=st.sampled_from(["D_td", "D_hdr"]))
def test_every_accepted_percent_list_validates_elasticsearchs_right_answer_and_catches_a_wrong_one(truth, percents, digits, variant):
    parameters.check({"percents": percents, "hdr_digits": digits})  # accepted
    for node, entry in truth.items():
        expectation = NodeExpectation(entry, variant, percents, hdr_digits=digits)
        assert not caught(keyed_answer(expectation, entry["sum"]), expectation), (node, percents)
        p = percents[0]
        low, high, _ = expectation.percentiles["cpu"][p]
        outside = high + max(abs(high), 1.0) * 1e-3
        assert caught(substitute(keyed_answer(expectation, entry["sum"]), "cpu", {p: outside}), expectation), (node, p, outside)


@settings(max_examples=25, deadline=None)
@given(percents=PERCENTS, digits=st.integers(0, rules.MAX_HDR_DIGITS), iterations=st.integers(1, 1000))
def test_every_accepted_value_renders_the_track_with_it(percents, digits, iterations):
    params = {"percents": percents, "hdr_digits": digits, "iterations": iterations}
    parameters.check(params)
    tasks = [t for t in rendered_tasks(rendered_challenges(params)["full"]) if t["operation"]["operation-type"] == "coverage"]
    assert tasks and all(t["operation"]["percents"] == percents and t["operation"]["hdr-digits"] == digits for t in tasks)
    assert all(t["iterations"] == iterations for t in tasks)


@settings(max_examples=40, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.booleans(), st.none(), st.lists(st.integers(), max_size=2)))
def test_a_wrong_percents_value_is_named_before_anything_runs(value):
    ok = isinstance(value, list) and value and all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= 100 for p in value)
    if ok:
        parameters.check({"percents": value})
    else:
        with pytest.raises(parameters.ParameterError, match="track parameter percents must be a non-empty list of numbers from 0 to 100"):
            parameters.check({"percents": value})

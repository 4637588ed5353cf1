"""A race's samples (report/shared/samples.py): one interface whether the source gave each sample's time or, for a
history read from a store by aggregation, each task's count, failures and order statistics."""

from report.shared import uncertainty
from report.shared.samples import FROM_STORE, Samples

TIMES = {"coverage-D_td-serial": [410.0, 398.0, 402.5, 420.0, 399.0, 405.0, 401.0, 415.0], "coverage-A-serial": None}


def statistics_of(times):
    """What a store's aggregation gives of the same samples: (n, failed, {rank: value})."""
    found = {}
    for task, values in times.items():
        if values is None:
            found[task] = (8, 1, {rank: 0.0 for rank in uncertainty.interval_ranks(8)})
            continue
        ordered = sorted(values)
        found[task] = (len(values), 0, {rank: ordered[rank] for rank in uncertainty.interval_ranks(len(values))})
    return found


def test_both_forms_answer_alike_for_a_measured_a_failed_and_an_absent_task():
    one_by_one, aggregated = Samples(TIMES, source=FROM_STORE), Samples(statistics=statistics_of(TIMES), source=FROM_STORE)
    assert one_by_one.individual and not aggregated.individual
    for samples in (one_by_one, aggregated):
        assert samples.has("coverage-D_td-serial") and not samples.failed("coverage-D_td-serial")
        assert samples.has("coverage-A-serial") and samples.failed("coverage-A-serial") and samples.values("coverage-A-serial") is None
        assert (
            not samples.has("coverage-B-serial") and not samples.failed("coverage-B-serial") and samples.values("coverage-B-serial") is None
        )
    assert aggregated.median_interval("coverage-D_td-serial") == one_by_one.median_interval("coverage-D_td-serial")
    assert one_by_one.of("coverage-D_td-serial") == TIMES["coverage-D_td-serial"] and aggregated.of("coverage-D_td-serial") is None


def test_no_samples_known_is_no_task_measured_and_no_fingerprint():
    nothing = Samples()
    assert not nothing.individual and not nothing.has("coverage-D_td-serial") and nothing.of("coverage-D_td-serial") is None
    assert list(nothing.items()) == [] and nothing.fingerprint() is None
    assert (
        Samples(TIMES).fingerprint()
        == Samples(dict(reversed(TIMES.items()))).fingerprint()
        != Samples(statistics=statistics_of(TIMES)).fingerprint()
    )

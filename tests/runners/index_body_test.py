"""Each create-index of the track merges its settings into its own copy of the index body (runners/shared/index_body.py)."""

from esrally.track import params, track

from runners.shared.index_body import FreshIndexBodyParamSource


def a_track():
    body = {"settings": {"index.number_of_shards": 1}, "mappings": {"properties": {"epoch": {"type": "long"}}}}
    return track.Track(name="t", indices=[track.Index(name="cluster-metrics", body=body)])


def settings_sent(source):
    ((name, body),) = source.params()["indices"]
    return name, body["settings"]


def test_rallys_own_create_index_carries_one_tasks_settings_into_the_next():
    """The trap: Rally's parameter source merges into the track's shared body."""
    shared = a_track()
    params.CreateIndexParamSource(shared, {"settings": {"index.refresh_interval": "-1"}})
    _, later = settings_sent(params.CreateIndexParamSource(shared, {"settings": {"index.number_of_replicas": 0}}))
    assert later["index.refresh_interval"] == "-1"


def test_each_task_gets_only_its_own_settings():
    shared = a_track()
    first = FreshIndexBodyParamSource(shared, {"settings": {"index.refresh_interval": "-1", "index.translog.durability": "async"}})
    later = FreshIndexBodyParamSource(shared, {"settings": {"index.number_of_replicas": 0}})
    assert settings_sent(first) == (
        "cluster-metrics",
        {"index.number_of_shards": 1, "index.refresh_interval": "-1", "index.translog.durability": "async"},
    )
    assert settings_sent(later) == ("cluster-metrics", {"index.number_of_shards": 1, "index.number_of_replicas": 0})
    assert shared.indices[0].body["settings"] == {"index.number_of_shards": 1}  # the track's own body untouched

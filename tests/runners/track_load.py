"""The track as a race gets it, for the track processor's tests (tests/runners/processor_*test.py): the real track file
read by Rally's own TrackFileReader (no node, no race), then Rally's processor a test names, then ours."""

import functools
import json
import pickle

from esrally import config, paths
from esrally.track import loader
from esrally.utils import opts

import cmgen
from runners.operations import OPERATIONS
from runners.processor import ClusterMetricsProcessor
from tests.conftest import TRACK_DIR

SMALL = cmgen.Params(epochs=5, rows_per_epoch=1500, nodes=30, tasks=20, seed=11)
WIDTH_PARAMS = {"widths": [12, 1200], "width_rows_per_epoch": 2400, "width_variants": ["D_td"]}


@functools.lru_cache(maxsize=None)
def _read(track_params, challenge):
    """The track as Rally's TrackFileReader reads it with these parameters (JSON text), read once per process and kept
    pickled: the read (rendering, the schema check) is most of a load, and depends on nothing else of the
    configuration. load() unpickles a copy, since the processors change the track (as Rally's actors receive it; a
    deep copy took four times as long)."""
    cfg = config.Config()
    for section, key, value in [
        ("node", "rally.root", paths.rally_root()),
        ("track", "params", json.loads(track_params)),
        ("track", "challenge.name", challenge),
    ]:
        cfg.add(config.Scope.application, section, key, value)
    return pickle.dumps(loader.TrackFileReader(cfg).read("cluster-metrics", str(TRACK_DIR / "track.json"), str(TRACK_DIR)))


def load(
    root, track_params=None, test_mode=False, race_id="r-1", challenge=None, before=None, hosts=None, client=None
):  # parameters: a race's arguments, each a keyword with its default
    """The track as a race gets it: read by Rally, then `before` (one of Rally's own processors), then ours; `client`
    (target hosts, client options), as Rally's command line gives them."""
    cfg = config.Config()
    if hosts:
        cfg.add(config.Scope.application, "driver", "load_driver_hosts", hosts)
    if client:
        target = opts.TargetHosts(client[0])
        cfg.add(config.Scope.application, "client", "hosts", target)
        cfg.add(config.Scope.application, "client", "options", opts.ClientOptions(client[1], target_hosts=target))
    for section, key, value in [
        ("node", "rally.root", paths.rally_root()),
        ("node", "root.dir", str(root / "rally")),
        ("track", "params", track_params or {}),
        ("track", "test.mode.enabled", test_mode),
        ("track", "challenge.name", challenge),
        ("system", "race.id", race_id),
        ("benchmarks", "local.dataset.cache", str(root)),
    ]:
        cfg.add(config.Scope.application, section, key, value)
    track = pickle.loads(_read(json.dumps(track_params or {}, sort_keys=True), challenge))
    if before:
        before.on_after_load_track(track)
    processor = ClusterMetricsProcessor()
    processor.cfg = cfg
    processor.on_after_load_track(track)
    return track


def ours(track, challenge):
    """The challenge's tasks of this track's operations, those inside a parallel element (the interleaved cells) too."""
    elements = next(c for c in track.challenges if c.name == challenge).schedule
    tasks = [t for element in elements for t in (element.tasks if hasattr(element, "tasks") else [element])]
    return [t for t in tasks if t.operation.type in OPERATIONS]

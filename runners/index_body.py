"""The index each ingest creates afresh: Rally's create-index with the track's index body copied first.

Rally 2.13's create-index parameter source merges a task's `settings` into the track's own index body (track.indices,
shared by every task of the race), so the settings of one create-index would carry into every later one: an ingest
change's refresh_interval -1 into the next change's index and into the baseline's (a Rally trap, seen in `full`,
whose verify-corpus then refused the baseline's index). Each task here merges into its own copy.
"""

import copy

from esrally.track import params


class FreshIndexBodyParamSource(params.CreateIndexParamSource):
    """Rally's create-index parameters (the same task properties: settings, index, request-params), built on a copy of
    the track's index bodies, so that a task's settings reach its own index only."""

    def __init__(self, track, params, **kwargs):
        own = copy.copy(track)
        own.indices = copy.deepcopy(track.indices)
        super().__init__(own, params, **kwargs)

"""The index each ingest creates afresh: Rally's create-index with the track's index body copied first.

Rally 2.13's create-index parameter source merges a task's `settings` into the track's own index body (track.indices,
shared by every task of the race), so the settings of one create-index would carry into every later one: an ingest
change's refresh_interval -1 into the next change's index and into the baseline's (a Rally trap, seen in `full`,
whose verify-corpus then refused the baseline's index). Each task here merges into its own copy.
"""

import copy

from esrally.track import params

BODY_OF = "body-of"  # operation parameter: create the index named by "index" with this track index's body


class FreshIndexBodyParamSource(params.CreateIndexParamSource):
    """Rally's create-index parameters (the same task properties: settings, index, request-params), built on a copy of
    the track's index bodies, so that a task's settings reach its own index only.

    With "body-of": <a track index> and "index": <a name the track does not declare>, that one index is created with
    the track index's body (mapping and settings; not its _meta, whose corpus fingerprint says what the corpus index
    holds): the layout sweep's single-document index is the corpus index's twin, and every other create-index of the
    track (which creates every declared index) never creates it."""

    def __init__(self, track, params, **kwargs):
        own = copy.copy(track)
        own.indices = copy.deepcopy(track.indices)
        if params.get(BODY_OF):
            template = next((index for index in own.indices if index.name == params[BODY_OF]), None)
            if template is None or not params.get("index") or any(index.name == params["index"] for index in own.indices):
                raise ValueError(f"{BODY_OF} {params[BODY_OF]!r} must name a track index, and index one the track does not declare")
            template.name = params["index"]
            if template.body:
                template.body.get("mappings", {}).pop("_meta", None)
            own.indices = [template]
        super().__init__(own, params, **kwargs)

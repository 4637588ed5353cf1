"""Custom runners, parameter sources and the track processor of the cluster-metrics track."""


def register(registry):
    # imported here: the report and the generator import this package's small modules without Rally's machinery
    from esrally.track import loader

    from runners.operations import OPERATIONS, PARAM_SOURCES
    from runners.processor import ClusterMetricsProcessor
    from runners.shared.hosts import NamesItsHost
    from runners.studies.load import SCHEDULER, RelativeRateScheduler
    from runners.studies.scope import Scoped

    # a custom processor replaces Rally's default preparator (decompression, file checks) unless it is registered too;
    # ours first, so that each load-driver host's corpus check names the fix before Rally's preparator looks
    registry.register_track_processor(ClusterMetricsProcessor())
    registry.register_track_processor(loader.DefaultTrackPreparator())
    for name, operation in OPERATIONS.items():
        if operation.param_source:
            registry.register_param_source(name, operation.param_source)
        # every runner with the scoped changes its parameters ask for (a remote registration, a fault) around each call,
        # and each sample naming the load-driver host that ran it
        registry.register_runner(name, NamesItsHost(Scoped(operation.runner())), async_runner=True)
    for name, param_source in PARAM_SOURCES.items():
        registry.register_param_source(name, param_source)
    registry.register_scheduler(SCHEDULER, RelativeRateScheduler)

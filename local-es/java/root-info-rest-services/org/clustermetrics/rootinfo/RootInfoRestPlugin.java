package org.clustermetrics.rootinfo;

import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.rest.RestHandler;

import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;

/** RootInfoPlugin on 9.x: getRestHandlers takes one RestHandlersServices. */
public final class RootInfoRestPlugin extends RootInfoPlugin {
    @Override
    public Collection<RestHandler> getRestHandlers(
        RestHandlersServices services,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(rootInfoHandler());
    }
}

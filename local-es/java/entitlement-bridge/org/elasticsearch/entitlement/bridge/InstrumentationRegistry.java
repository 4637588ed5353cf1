package org.elasticsearch.entitlement.bridge;

/**
 * What the instrumented JDK methods call before they act (the launcher's stand-in for Elasticsearch's unpublished
 * entitlement bridge, patched into java.base). The published elasticsearch-entitlement jar implements it; the names
 * and descriptors are those its instrumenter emits (checked when the node home is built: EntitlementShapeCheck).
 */
public interface InstrumentationRegistry {
    void check$(String instrumentationId, Class<?> callingClass, Object... args) throws Exception;

    Object defaultValue$(String instrumentationId);
}

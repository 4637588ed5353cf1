import org.elasticsearch.entitlement.bridge.InstrumentationRegistry;
import org.elasticsearch.entitlement.initialization.EntitlementInitialization;

import java.lang.instrument.Instrumentation;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Compiled, never run, against the launcher's bridge and the version's published entitlement jar: it compiles only
 * if that version's initialization has the two entry points the bridge and the agent call, and if the registry it
 * returns is the bridge's InstrumentationRegistry. So a release that changes the bridge's shape stops the build of
 * the node home with javac's message, not a node that fails at its first file access.
 */
final class EntitlementShapeCheck {
    static final Supplier<InstrumentationRegistry> REGISTRY = EntitlementInitialization::instrumentationRegistry;
    static final Consumer<Instrumentation> AGENT = EntitlementInitialization::initialize;

    private EntitlementShapeCheck() {}
}

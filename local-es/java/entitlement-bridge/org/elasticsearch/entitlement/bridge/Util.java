package org.elasticsearch.entitlement.bridge;

/** The caller lookup the instrumented code uses (StackWalker's getCallerClass throws from an outermost frame). */
public final class Util {
    /** The caller of a method called directly from the JVM: it has none. */
    public static final Class<?> NO_CLASS = new Object() {}.getClass();

    /** The class that called the method which called this one, or NO_CLASS. */
    public static Class<?> getCallerClass() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
            .walk(frames -> frames.skip(2).findFirst().<Class<?>>map(StackWalker.StackFrame::getDeclaringClass))
            .orElse(NO_CLASS);
    }

    private Util() {}
}

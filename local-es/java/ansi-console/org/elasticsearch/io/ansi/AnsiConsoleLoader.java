package org.elasticsearch.io.ansi;

import org.elasticsearch.bootstrap.ConsoleLoader;

import java.util.function.Supplier;

/**
 * Stands in for the unpublished ansi-console tool that the bootstrap loads from lib/tools/ansi-console.
 * Returning null tells the bootstrap there is no console: the node logs to its files only.
 */
public final class AnsiConsoleLoader implements Supplier<ConsoleLoader.Console> {
    @Override
    public ConsoleLoader.Console get() {
        return null;
    }
}

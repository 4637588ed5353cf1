import org.elasticsearch.bootstrap.ServerArgs;
import org.elasticsearch.common.io.stream.OutputStreamStreamOutput;
import org.elasticsearch.common.settings.KeyStoreWrapper;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes the binary ServerArgs record that Elasticsearch's bootstrap reads from stdin.
 * The unpublished server-cli normally writes it; here it is produced from the server's own classes.
 *
 * Usage: WriteServerArgs HOME CONFIG_DIR PID_FILE OUT_FILE
 */
public final class WriteServerArgs {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: WriteServerArgs HOME CONFIG_DIR PID_FILE OUT_FILE");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Path configDir = Path.of(args[1]).toAbsolutePath();
        Path pidFile = Path.of(args[2]).toAbsolutePath();
        Settings input = Settings.builder().put("path.home", home.toString()).build();
        Environment env = InternalSettingsPreparer.prepareEnvironment(input, Map.of(), configDir, () -> null);
        // path.logs as the environment resolved it (Environment's getter is logsFile() before 8.19, logsDir() after)
        Path logsDir = Path.of(Environment.PATH_LOGS_SETTING.get(env.settings()));
        // daemonize=true: the server does not treat EOF on stdin as a shutdown request, so a file works as stdin.
        ServerArgs serverArgs = new ServerArgs(true, true, pidFile, KeyStoreWrapper.create(), env.settings(), configDir, logsDir);
        try (OutputStream out = Files.newOutputStream(Path.of(args[3])); OutputStreamStreamOutput stream = new OutputStreamStreamOutput(out)) {
            serverArgs.writeTo(stream);
        }
    }
}

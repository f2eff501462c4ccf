package io.sluice.bootstrap;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import io.sluice.config.TrustedHeaders;
import io.sluice.rls.config.RlsSettings;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice [serve] [--config FILE]}, {@code sluice validate FILE} (errors, plus warnings for
 * trusted headers the shipped Envoy configs do not strip), {@code sluice config print-default},
 * {@code sluice calibrate --target URL} (a bounded load test that proposes a pool: {@link
 * io.sluice.calibrate.CalibrateCommand}), {@code sluice version}. Every command takes {@code
 * -h}/{@code --help}.
 */
@Command(
    name = "sluice",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Admission controller for AI traffic beside Envoy.",
    subcommands = {
      Main.Serve.class,
      Main.Validate.class,
      Main.ConfigCommand.class,
      io.sluice.calibrate.CalibrateCommand.class,
      io.sluice.bootstrap.replay.ReplayCommand.class,
      Main.VersionCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main implements Callable<Integer> {
  @Option(names = "--config", description = "policy YAML (default: the embedded default)")
  @Nullable Path config; // null: the embedded default

  @SuppressWarnings("NullAway.Init") // set by picocli before call()
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    Serve s = new Serve();
    s.config = config;
    s.spec = spec; // for its output streams
    return s.call();
  }

  /** Exit code of {@code serve} when a port cannot be bound (2: invalid config; 1: other). */
  static final int EXIT_PORT = 3;

  public static void main(String[] args) {
    // serve returns only after shutdown; exit explicitly so no non-daemon thread lingers
    System.exit(new CommandLine(new Main()).execute(args));
  }

  /** Applies GRPC_HOST, GRPC_PORT, HOST and PORT over the file's values. */
  public static SluiceConfig withEnv(SluiceConfig c, Map<String, String> env) {
    SluiceConfig.Server s = c.server();
    String grpcHost = env.getOrDefault("GRPC_HOST", s.grpcHost());
    String adminHost = env.getOrDefault("HOST", s.adminHost());
    int grpcPort = port(env.get("GRPC_PORT"), s.grpcPort(), "GRPC_PORT");
    int adminPort = port(env.get("PORT"), s.adminPort(), "PORT");
    SluiceConfig.Server ns =
        new SluiceConfig.Server(
            grpcHost,
            grpcPort,
            adminHost,
            adminPort,
            s.maxInboundMessageBytes(),
            s.shutdownGrace(),
            s.tls(),
            s.reloadInterval(),
            s.health(),
            s.warmup(),
            s.streams(),
            s.http2(),
            s.adminControl());
    return new SluiceConfig(
        ns,
        c.limits(),
        c.estimation(),
        c.pools(),
        c.classes(),
        c.tiers(),
        c.tenants(),
        c.signals(),
        c.routes(),
        c.unmatched(),
        c.responses(),
        c.decisionLog(),
        c.rateLimit(),
        c.quotas(),
        c.replicas(),
        c.yaml(),
        c.poolModes(),
        c.sections());
  }

  private static int port(@Nullable String v, int def, String name) {
    if (v == null || v.isBlank()) {
      return def;
    }
    try {
      int p = Integer.parseInt(v.trim());
      if (p >= 0 && p <= 65535) {
        return p;
      }
    } catch (NumberFormatException ignored) {
      // fall through
    }
    throw new ConfigException(java.util.List.of(name + ": " + v + " (expected: a port 0..65535)"));
  }

  @Command(
      name = "serve",
      mixinStandardHelpOptions = true,
      versionProvider = Main.Version.class,
      description = "Run the server (the default command).")
  static final class Serve implements Callable<Integer> {
    @Option(names = "--config", description = "policy YAML (default: the embedded default)")
    @Nullable Path config; // null: the embedded default

    @SuppressWarnings("NullAway.Init") // set by picocli before call()
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
      PrintWriter err = spec.commandLine().getErr();
      SluiceConfig c;
      try {
        c = config == null ? ConfigLoader.embeddedDefault() : ConfigLoader.load(config);
        c = withEnv(c, System.getenv());
      } catch (ConfigException e) {
        err.println("sluice: invalid config " + (config == null ? "(embedded)" : config));
        e.errors().forEach(x -> err.println("  " + x));
        err.flush();
        return 2;
      } catch (IOException e) {
        err.println("sluice: cannot read " + config + ": " + e.getMessage());
        err.flush();
        return 2;
      }
      SluiceServer server;
      try {
        server =
            SluiceServer.start(
                c,
                new SluiceServer.Options(
                    config,
                    System.getenv(),
                    io.sluice.core.time.Ticker.system(),
                    java.time.Clock.systemUTC()));
      } catch (ConfigException e) {
        // Already redacted by the server: settings from the environment are checked at start.
        err.println("sluice: invalid config " + (config == null ? "(embedded)" : config));
        e.errors().forEach(x -> err.println("  " + x));
        err.flush();
        return 2;
      } catch (PortBindException e) {
        err.println("sluice: " + e.getMessage());
        err.flush();
        return EXIT_PORT;
      } catch (IOException e) { // e.g. TLS files that cannot be read
        err.println("sluice: cannot start: " + e.getMessage());
        err.flush();
        return 1;
      }
      CountDownLatch stopped = new CountDownLatch(1);
      final SluiceConfig effective = c;
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    // a JVM shutdown hook: SIGTERM (Kubernetes), SIGINT (Ctrl-C) or SIGHUP
                    server.shutdown(
                        effective.server().shutdownGrace(), "signal: SIGTERM, SIGINT or SIGHUP");
                    stopped.countDown();
                  },
                  "sluice-shutdown"));
      server.awaitTermination();
      stopped.await();
      return 0;
    }
  }

  @Command(
      name = "validate",
      mixinStandardHelpOptions = true,
      versionProvider = Main.Version.class,
      description = "Check a policy file; print every error with its path.")
  static final class Validate implements Callable<Integer> {
    @SuppressWarnings("NullAway.Init") // a required parameter: set by picocli before call()
    @Parameters(index = "0", paramLabel = "FILE", description = "the policy YAML to check")
    Path file;

    @SuppressWarnings("NullAway.Init") // set by picocli before call()
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      if (!Files.isReadable(file)) {
        err.println(file + ": cannot read file");
        return 2;
      }
      try {
        SluiceConfig c = ConfigLoader.load(file);
        Secrets.Redactor redactor = Secrets.redactor(c.rateLimit().env());
        try {
          RlsSettings.fromEnv(c.rateLimit().env());
          StoreEnv.settings(c.rateLimit().env());
        } catch (IllegalArgumentException e) {
          err.println(file + ": 1 error(s)");
          err.println("  rateLimit.env." + redactor.scrubOrNull(e.getMessage()));
          return 1;
        }
        for (String w : TrustedHeaders.warnings(c)) {
          err.println(file + ": warning: " + w);
        }
        for (String w : io.sluice.config.TenantSignals.warnings(c)) {
          err.println(file + ": warning: " + w);
        }
        for (String w : io.sluice.config.ToolQueues.warnings(c)) {
          err.println(file + ": warning: " + w);
        }
        out.println(
            file
                + ": OK ("
                + c.pools().size()
                + " pools, "
                + c.classes().size()
                + " classes, "
                + c.routes().size()
                + " routes)");
        return 0;
      } catch (ConfigException e) {
        err.println(file + ": " + e.errors().size() + " error(s)");
        e.errors().forEach(x -> err.println("  " + x));
        return 1;
      } catch (IOException e) {
        err.println(file + ": " + e.getMessage());
        return 2;
      }
    }
  }

  @Command(
      name = "config",
      mixinStandardHelpOptions = true,
      versionProvider = Main.Version.class,
      description = "Print policies.",
      subcommands = {Main.PrintDefault.class})
  static final class ConfigCommand implements Callable<Integer> {
    @SuppressWarnings("NullAway.Init") // set by picocli before call()
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      spec.commandLine().usage(spec.commandLine().getErr());
      return 2;
    }
  }

  @Command(
      name = "print-default",
      mixinStandardHelpOptions = true,
      versionProvider = Main.Version.class,
      description = {
        "Print the embedded default policy (what `serve` runs without --config), with its comments.",
        "With --effective: every setting with its default filled in, as /config shows it.",
        "Either output is a policy file: `sluice validate` accepts it."
      })
  static final class PrintDefault implements Callable<Integer> {
    @Option(
        names = "--effective",
        description = "every setting with its default value, not the commented file")
    boolean effective;

    @Option(
        names = "--format",
        paramLabel = "yaml|json",
        description = "with --effective: yaml (default) or json")
    String format = "yaml";

    @SuppressWarnings("NullAway.Init") // set by picocli before call()
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      ConfigView.Format f = ConfigView.Format.parse(format);
      if (f == null) {
        spec.commandLine().getErr().println("--format: " + format + " (expected: yaml or json)");
        return 2;
      }
      PrintWriter out = spec.commandLine().getOut();
      if (!effective) {
        if (f != ConfigView.Format.YAML) {
          spec.commandLine().getErr().println("--format json needs --effective");
          return 2;
        }
        out.print(ConfigLoader.embeddedDefaultYaml());
      } else {
        out.print(ConfigView.render(ConfigLoader.embeddedDefault(), f));
      }
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "version",
      mixinStandardHelpOptions = true,
      versionProvider = Main.Version.class,
      description = "Print the version and the commit it was built from.")
  static final class VersionCommand implements Callable<Integer> {
    @SuppressWarnings("NullAway.Init") // set by picocli before call()
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      spec.commandLine().getOut().println(versionLine());
      return 0;
    }
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {versionLine()};
    }
  }

  /** {@code sluice 0.1.0 (commit 1a2b3c4)}; the commit is "unknown" when built without git. */
  static String versionLine() {
    return "sluice " + version() + " (commit " + commit() + ")";
  }

  static String version() {
    return buildInfo().getProperty("version", "unknown");
  }

  /** The abbreviated commit id the jar was built from, or "unknown" (no .git at build time). */
  static String commit() {
    String c = buildInfo().getProperty("commit", "");
    // an unresolved ${git.commit.id.abbrev}: built from a tree without git metadata
    return c.isBlank() || c.contains("${") ? "unknown" : c.trim();
  }

  private static Properties buildInfo() {
    Properties p = new Properties();
    try (InputStream in = Main.class.getResourceAsStream("/io/sluice/version.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // no build info: every value is "unknown"
    }
    return p;
  }
}

package io.sluice.bootstrap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.config.ConfigException;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import io.sluice.observability.MetricNames;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The watched policy file: re-read every {@code server.reloadInterval}, applied when its content
 * changed, a bad or missing file reported once per cause while the last good policy keeps serving.
 * Counts {@code sluice_config_reloads_total{result}} and {@code sluice_config_last_reload_success}.
 */
final class PolicyFile {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  private final @Nullable Path file; // null: the embedded default (never re-read)
  private final Function<String, SluiceConfig> parse;
  private final Consumer<SluiceConfig> apply;
  private final Supplier<Duration> reloadInterval;
  private final Secrets.Redactor redactor;
  private final Counter reloadSuccess;
  private final Counter reloadFailure;

  /** Digest of the policy text last looked at (applied or rejected), and of the one active. */
  private volatile @Nullable String seenDigest;

  private volatile String appliedDigest;
  private volatile String lastReloadError = "";
  private volatile boolean lastReloadOk = true;

  /** Why the policy file cannot be read (once per cause), or null while it can. */
  private @Nullable String unreadable;

  /**
   * @param parse the text to a config (a {@link ConfigException} names every error)
   * @param apply swaps the config in; it calls {@link #applied()} when done
   */
  PolicyFile(
      @Nullable Path file,
      String activeYaml,
      Function<String, SluiceConfig> parse,
      Consumer<SluiceConfig> apply,
      Supplier<Duration> reloadInterval,
      Secrets.Redactor redactor,
      MeterRegistry registry) {
    this.file = file;
    this.parse = parse;
    this.apply = apply;
    this.reloadInterval = reloadInterval;
    this.redactor = redactor;
    this.seenDigest = digest(activeYaml);
    this.appliedDigest = seenDigest;
    this.reloadSuccess =
        Counter.builder(MetricNames.CONFIG_RELOADS).tag("result", "success").register(registry);
    this.reloadFailure =
        Counter.builder(MetricNames.CONFIG_RELOADS).tag("result", "failure").register(registry);
    Gauge.builder("sluice.config.last_reload_success", this, s -> s.lastReloadOk ? 1 : 0)
        .description("1 if the last config reload succeeded (or none was tried)")
        .register(registry);
  }

  /** Re-reads the file and applies it if its content changed; true if a new config is active. */
  synchronized boolean reloadIfChanged() {
    if (file == null) {
      return false;
    }
    String yaml;
    try {
      yaml = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      String why = e instanceof java.nio.file.NoSuchFileException ? "no such file" : e.toString();
      if (!why.equals(unreadable)) { // once per cause, not every reloadInterval
        unreadable = why;
        seenDigest = null; // whatever comes back is looked at again
        failed(
            file
                + ": cannot read ("
                + why
                + "); serving the last good policy, checking every "
                + io.sluice.config.ConfigWriter.duration(reloadInterval.get()));
      }
      return false;
    }
    String d = digest(yaml);
    if (unreadable != null) {
      unreadable = null;
      boolean same = d.equals(appliedDigest);
      LOG.info(
          "config file {} is readable again{}",
          file,
          same ? "; unchanged: the active policy stays" : "; loading it");
      if (same) {
        seenDigest = d;
        lastReloadOk = true;
        lastReloadError = "";
        return false;
      }
    }
    if (d.equals(seenDigest)) {
      return false;
    }
    seenDigest = d;
    try {
      apply.accept(parse.apply(yaml));
      appliedDigest = d;
      return true;
    } catch (ConfigException e) {
      return failed(file + ": " + String.join("; ", e.errors()));
    }
  }

  /** A new config is active (a reload, or {@code SluiceServer.apply} called directly). */
  void applied() {
    lastReloadOk = true;
    lastReloadError = "";
    reloadSuccess.increment();
  }

  private boolean failed(String rawError) {
    String error = redactor.scrub(rawError);
    lastReloadOk = false;
    lastReloadError = error;
    reloadFailure.increment();
    LOG.warn("config reload failed, keeping the last good config: {}", error);
    return false;
  }

  boolean lastReloadOk() {
    return lastReloadOk;
  }

  String lastReloadError() {
    return lastReloadError;
  }

  /** SHA-256 of the active policy text (hex). */
  String appliedDigest() {
    return appliedDigest;
  }

  static String digest(String s) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}

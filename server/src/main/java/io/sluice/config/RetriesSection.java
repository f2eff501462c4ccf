package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.retry.RetryAttemptCheck;
import io.sluice.core.retry.RetryPolicy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code retries} section (docs/configuration.md, "Retries"): read and validated here, written
 * back for {@code /config}. Every error names its YAML path and the value expected.
 */
public final class RetriesSection implements ConfigSection<RetryPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(RetriesSection.SECTION)}. */
  public static final RetriesSection SECTION = new RetriesSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public RetriesSection() {}

  @Override
  public String name() {
    return "retries";
  }

  @Override
  public RetryPolicy defaults() {
    return RetryPolicy.DEFAULTS;
  }

  /**
   * An SDK's retry counter ({@code signals.retryCount}, 0 on the first try). Safe from a client:
   * claiming to be a retry can only cost the client its own retry budget.
   */
  public static final SluiceConfig.Signal RETRY_COUNT =
      SluiceConfig.Signal.of(RetryAttemptCheck.RETRY_COUNT);

  /**
   * Envoy's attempt count ({@code signals.attemptCount}, 1 on the first try) of a gateway in front;
   * safe as {@link #RETRY_COUNT}.
   */
  public static final SluiceConfig.Signal ATTEMPT_COUNT =
      SluiceConfig.Signal.of(RetryAttemptCheck.ATTEMPT_COUNT);

  /**
   * The downstream client's address as Envoy reports it ({@code signals.client}, by default the
   * {@code source.address} attribute): the anonymous tenant's retries are counted per client
   * address, not in one bucket for every client without a tenant. Guarded: a source a client can
   * set would give it a fresh budget per retry.
   */
  public static final SluiceConfig.Signal CLIENT =
      SluiceConfig.Signal.guarded(RetryAttemptCheck.CLIENT);

  private static final Set<String> SIGNALS =
      Set.of(
          SluiceConfig.Signal.OPERATION_ID.key(),
          RETRY_COUNT.key(),
          ATTEMPT_COUNT.key(),
          CLIENT.key());

  /** The retry signals, which {@code signals:} accepts while this section is registered. */
  @Override
  public List<SluiceConfig.Signal> declaredSignals() {
    return List.of(RETRY_COUNT, ATTEMPT_COUNT, CLIENT);
  }

  /** The client's address as Envoy saw it (its own attribute, not a header a client sets). */
  @Override
  public Map<String, String> signalAttributes() {
    return Map.of(CLIENT.key(), "source.address");
  }

  /**
   * Retry control reads the operation id and the attempt signals of every request while it is on.
   */
  @Override
  public Set<String> signals(RetryPolicy p) {
    return p.enabled() ? SIGNALS : Set.of();
  }

  /**
   * Read from the client's own headers unless the policy says otherwise: a client can only hurt
   * itself by claiming to be a retry (docs/configuration.md, "Retries").
   */
  @Override
  public Map<String, String> signalHeaders() {
    return Map.of(
        RETRY_COUNT.key(), "x-stainless-retry-count",
        ATTEMPT_COUNT.key(), "x-envoy-attempt-count");
  }

  @Override
  public RetryPolicy read(Node n, Refs refs) {
    return read(n, refs.routes());
  }

  /** The section; {@code routeNames}: the routes a per-route override may name. */
  static RetryPolicy read(Node n, Set<String> routeNames) {
    RetryPolicy d = RetryPolicy.DEFAULTS;
    n.only(Set.of("enabled", "window", "maxEntries", "budget", "earlyRetry", "duplicates"));
    boolean enabled = n.get("enabled").bool(d.enabled());
    Duration window = n.get("window").duration(d.window());
    if (window.compareTo(Duration.ofSeconds(1)) < 0 || window.compareTo(Duration.ofHours(1)) > 0) {
      n.get("window").invalid(ConfigWriter.duration(window), "a duration in 1s..1h");
      window = d.window();
    }
    int maxEntries = n.get("maxEntries").intValue(d.maxEntries(), 1, 10_000_000);

    Node b = n.get("budget").only(Set.of("enabled", "scope", "maxTokens", "tokenRatio"));
    RetryPolicy.Budget db = d.budget();
    double maxTokens = positive(b.get("maxTokens"), db.maxTokens(), 1000);
    double ratio = positive(b.get("tokenRatio"), db.tokenRatio(), maxTokens);
    RetryPolicy.Budget budget =
        new RetryPolicy.Budget(
            b.get("enabled").bool(db.enabled()),
            b.get("scope")
                .enumValue(
                    RetryPolicy.Budget.Scope.class,
                    db.scope(),
                    RetryPolicy.Budget.Scope::configName),
            maxTokens,
            ratio);

    RetryPolicy.EarlyRetry early =
        n.get("earlyRetry")
            .enumValue(
                RetryPolicy.EarlyRetry.class, d.earlyRetry(), RetryPolicy.EarlyRetry::configName);

    Node du = n.get("duplicates").only(Set.of("inFlight", "replayWindow", "maxInFlight", "routes"));
    RetryPolicy.Duplicates dd = d.duplicates();
    RetryPolicy.Duplicates.Action inFlight = action(du.get("inFlight"), dd.inFlight());
    Duration replay = replay(du.get("replayWindow"), dd.replayWindow());
    Duration maxInFlight = du.get("maxInFlight").duration(dd.maxInFlight());
    if (maxInFlight.compareTo(Duration.ofSeconds(1)) < 0
        || maxInFlight.compareTo(Duration.ofHours(24)) > 0) {
      du.get("maxInFlight").invalid(ConfigWriter.duration(maxInFlight), "a duration in 1s..24h");
      maxInFlight = dd.maxInFlight();
    }
    Map<String, RetryPolicy.Duplicates.Route> routes = new LinkedHashMap<>();
    for (var e : du.get("routes").entries().entrySet()) {
      Node r = e.getValue().only(Set.of("inFlight", "replayWindow"));
      if (!routeNames.contains(e.getKey()) && !e.getKey().equals("unmatched")) {
        r.invalid(e.getKey(), "the name of a route in routes, or unmatched");
        continue;
      }
      routes.put(
          e.getKey(),
          new RetryPolicy.Duplicates.Route(
              action(r.get("inFlight"), inFlight), replay(r.get("replayWindow"), replay)));
    }
    return new RetryPolicy(
        enabled,
        window,
        maxEntries,
        budget,
        early,
        new RetryPolicy.Duplicates(inFlight, replay, maxInFlight, routes));
  }

  /** A number in (0, max]: "retries.budget.tokenRatio: -1 (expected: > 0 and <= 10.0)". */
  private static double positive(Node n, double def, double max) {
    if (!n.present()) {
      return def;
    }
    if (!n.value().isNumber() || !(n.value().asDouble() > 0) || n.value().asDouble() > max) {
      // a number, never a secret (Secrets masks keys with "token" in their name)
      n.error(n.path() + ": " + n.value() + " (expected: > 0 and <= " + max + ")");
      return def;
    }
    return n.value().asDouble();
  }

  private static RetryPolicy.Duplicates.Action action(Node n, RetryPolicy.Duplicates.Action def) {
    return n.enumValue(
        RetryPolicy.Duplicates.Action.class, def, RetryPolicy.Duplicates.Action::configName);
  }

  private static Duration replay(Node n, Duration def) {
    Duration v = n.duration(def);
    if (v.isNegative() || v.compareTo(Duration.ofHours(24)) > 0) {
      n.invalid(ConfigWriter.duration(v), "0 (off) or a duration up to 24h");
      return def;
    }
    return v;
  }

  /** The section as the loader reads it. */
  @Override
  public ObjectNode write(RetryPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("enabled", p.enabled())
        .put("window", ConfigWriter.duration(p.window()))
        .put("maxEntries", p.maxEntries());
    RetryPolicy.Budget b = p.budget();
    n.putObject("budget")
        .put("enabled", b.enabled())
        .put("scope", b.scope().configName())
        .put("maxTokens", b.maxTokens())
        .put("tokenRatio", b.tokenRatio());
    n.put("earlyRetry", p.earlyRetry().configName());
    RetryPolicy.Duplicates d = p.duplicates();
    ObjectNode dn = n.putObject("duplicates");
    dn.put("inFlight", d.inFlight().configName())
        .put("replayWindow", ConfigWriter.duration(d.replayWindow()))
        .put("maxInFlight", ConfigWriter.duration(d.maxInFlight()));
    ObjectNode routes = dn.putObject("routes");
    d.routes()
        .forEach(
            (name, r) ->
                routes
                    .putObject(name)
                    .put("inFlight", r.inFlight().configName())
                    .put("replayWindow", ConfigWriter.duration(r.replayWindow())));
    return n;
  }
}

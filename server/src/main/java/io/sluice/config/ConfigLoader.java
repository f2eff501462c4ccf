package io.sluice.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.config.SluiceConfig.EstimateFrom;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.EnginePriority;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.policy.WorkflowPolicy;
import io.sluice.core.share.ReplicaPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Reads YAML into a validated {@link SluiceConfig}: every error is collected with its YAML path and
 * the expected value; unknown keys are errors. Cross-references (routes → pools/classes, tenants →
 * tiers, share sums) are checked on the whole snapshot.
 */
public final class ConfigLoader {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  public static final String DEFAULT_RESOURCE = "/io/sluice/config/default.yaml";

  private ConfigLoader() {}

  /** The embedded default policy. */
  public static SluiceConfig embeddedDefault() {
    return parse(embeddedDefaultYaml());
  }

  /** The embedded default policy's YAML text. */
  public static String embeddedDefaultYaml() {
    try (InputStream in = ConfigLoader.class.getResourceAsStream(DEFAULT_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("missing embedded default " + DEFAULT_RESOURCE);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static SluiceConfig load(Path file) throws IOException {
    return parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  /** Parses and validates; throws {@link ConfigException} listing every error. */
  public static SluiceConfig parse(String yaml) {
    List<String> errors = new ArrayList<>();
    JsonNode root;
    try {
      root = YAML.readTree(yaml);
    } catch (IOException e) {
      throw new ConfigException(List.of(syntaxError(e)));
    }
    if (root == null || root.isMissingNode() || root.isNull()) {
      root = YAML.createObjectNode();
    }
    Node r = new Node(root, "", errors);
    r.only(
        Set.of(
            "server",
            "limits",
            "estimation",
            "pools",
            "classes",
            "tiers",
            "tenants",
            "signals",
            "routes",
            "unmatched",
            "responses",
            "decisionLog",
            "rateLimit",
            "quotas",
            "replicas",
            "retries"));
    SluiceConfig config = build(r, yaml);
    if (!errors.isEmpty()) {
      throw new ConfigException(errors);
    }
    return config;
  }

  /**
   * {@code (document): not valid YAML at line 3, column 7: <problem> (<context>)}: SnakeYAML's
   * position (1-based) and problem, never the offending text beyond what its message quotes.
   */
  static String syntaxError(IOException e) {
    String where = "";
    String what = firstLine(e.getMessage());
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.yaml.snakeyaml.error.MarkedYAMLException m
          && m.getProblemMark() != null) {
        where =
            " at line "
                + (m.getProblemMark().getLine() + 1)
                + ", column "
                + (m.getProblemMark().getColumn() + 1);
        what =
            m.getProblem()
                + (m.getContext() == null || m.getContext().isBlank()
                    ? ""
                    : " (" + m.getContext() + ")");
        break;
      }
      if (t == e
          && e instanceof com.fasterxml.jackson.core.JsonProcessingException j
          && j.getLocation() != null
          && j.getLocation().getLineNr() > 0) {
        where =
            " at line " + j.getLocation().getLineNr() + ", column " + j.getLocation().getColumnNr();
        what = firstLine(j.getOriginalMessage());
      }
    }
    return "(document): not valid YAML" + where + ": " + Secrets.redactUrls(what);
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  private static SluiceConfig build(Node r, String yaml) {
    SluiceConfig.Server server = server(r.get("server"));
    Node lim = r.get("limits").only(Set.of("maxBodyBytes"));
    SluiceConfig.Limits limits = new SluiceConfig.Limits(lim.get("maxBodyBytes").bytes(8 << 20));
    SluiceConfig.Estimation estimation = estimation(r.get("estimation"));

    Map<String, PoolPolicy> pools = new LinkedHashMap<>();
    Map<String, SluiceConfig.Mode> poolModes = new LinkedHashMap<>();
    for (var e : r.get("pools").entries().entrySet()) {
      PoolPolicy p = pool(e.getKey(), e.getValue());
      if (p != null) {
        pools.put(e.getKey(), p);
        poolModes.put(e.getKey(), mode(e.getValue().get("mode"), SluiceConfig.Mode.ENFORCE));
      }
    }
    if (r.get("pools").present() && r.get("pools").entries().isEmpty()) {
      r.get("pools").invalid("{}", "at least one pool");
    }
    if (!r.get("pools").present()) {
      r.get("pools").error("pools: missing (expected: at least one pool)");
    }

    Map<String, ClassPolicy> classes = new LinkedHashMap<>();
    for (var e : r.get("classes").entries().entrySet()) {
      ClassPolicy c = requestClass(e.getKey(), e.getValue());
      if (c != null) {
        classes.put(e.getKey(), c);
      }
    }
    Set<String> declaredPools = r.get("pools").entries().keySet();
    Set<String> declaredClasses = r.get("classes").entries().keySet();
    if (declaredClasses.isEmpty()) {
      r.get("classes").error("classes: missing (expected: at least one class)");
    }
    for (var e : classes.entrySet()) {
      for (DegradePolicy.Rung rung : e.getValue().degrade().ladder()) {
        if (rung instanceof DegradePolicy.Reroute rr && !declaredPools.contains(rr.pool())) {
          r.get("classes")
              .error(
                  "classes."
                      + e.getKey()
                      + ".degrade.ladder.reroute.pool: "
                      + rr.pool()
                      + " (expected: a name defined under pools: "
                      + String.join(", ", declaredPools)
                      + ")");
        }
      }
    }
    double reservedSum = classes.values().stream().mapToDouble(ClassPolicy::reservedShare).sum();
    if (reservedSum > 1.0 + 1e-9) {
      r.get("classes")
          .error(
              "classes.*.reservedShare: sum is "
                  + reservedSum
                  + " (expected: <= 1.0, shares are fractions of each pool)");
    }

    Map<String, TierPolicy> tiers = new LinkedHashMap<>();
    for (var e : r.get("tiers").entries().entrySet()) {
      Node t = e.getValue().only(Set.of("weight", "maxInFlight", "rpm", "inputTpm", "outputTpm"));
      TierPolicy tp =
          t.build(
              () ->
                  new TierPolicy(
                      e.getKey(),
                      t.get("weight").doubleValue(1.0, 1e-6, 1e6),
                      t.get("maxInFlight").intValue(0, 0, 1_000_000),
                      t.get("rpm").longValue(0, 0, 1_000_000_000L),
                      t.get("inputTpm").longValue(0, 0, 1_000_000_000_000L),
                      t.get("outputTpm").longValue(0, 0, 1_000_000_000_000L)));
      if (tp != null) {
        tiers.put(e.getKey(), tp);
      }
    }
    if (tiers.isEmpty()) {
      tiers.put("default", TierPolicy.defaults("default"));
    }

    SluiceConfig.Tenants tenants = tenants(r.get("tenants"), tiers);
    Map<Signal, List<Source>> signals = signals(r.get("signals"));
    List<SluiceConfig.RouteRule> routes = new ArrayList<>();
    String defaultPool = declaredPools.isEmpty() ? "default" : declaredPools.iterator().next();
    for (Node n : r.get("routes").items()) {
      routes.add(route(n, declaredPools, declaredClasses, defaultPool));
    }
    SluiceConfig.Unmatched unmatched =
        unmatched(r.get("unmatched"), declaredPools, declaredClasses, defaultPool);

    Node resp =
        r.get("responses")
            .only(Set.of("decisionHeader", "estimateHeader", "deadlineHeader", "upstreamTimeout"));
    String deadlineHeader =
        resp.get("deadlineHeader")
            .string(SluiceConfig.Responses.DEADLINE_HEADER)
            .trim()
            .toLowerCase(Locale.ROOT);
    if (!deadlineHeader.isEmpty() && !TOKEN.matcher(deadlineHeader).matches()) {
      resp.get("deadlineHeader").invalid(deadlineHeader, "an HTTP header name, or \"\" for none");
    }
    SluiceConfig.Responses responses =
        new SluiceConfig.Responses(
            resp.get("decisionHeader").bool(true),
            resp.get("estimateHeader").bool(false),
            deadlineHeader,
            resp.get("upstreamTimeout").bool(false));

    Node dl =
        r.get("decisionLog")
            .only(
                Set.of(
                    "enabled",
                    "level",
                    "sampleRate",
                    "alwaysLogRejects",
                    "maxAdmittedPerSecond",
                    "maxRefusedPerSecond"));
    String level = dl.get("level").string("info").toLowerCase(Locale.ROOT);
    if (!Set.of("trace", "debug", "info", "warn").contains(level)) {
      dl.get("level").invalid(level, "one of trace, debug, info, warn");
    }
    SluiceConfig.DecisionLog decisionLog =
        new SluiceConfig.DecisionLog(
            dl.get("enabled").bool(true),
            level,
            dl.get("sampleRate").doubleValue(1.0, 0.0, 1.0),
            dl.get("alwaysLogRejects").bool(true),
            dl.get("maxAdmittedPerSecond").intValue(10, 0, 1_000_000),
            dl.get("maxRefusedPerSecond").intValue(50, 0, 1_000_000));

    Node rl = r.get("rateLimit").only(Set.of("enabled", "env"));
    Map<String, String> rlEnv = new LinkedHashMap<>();
    for (var e : rl.get("env").entries().entrySet()) {
      rlEnv.put(e.getKey(), e.getValue().requiredString());
    }
    SluiceConfig.RateLimit rateLimit =
        new SluiceConfig.RateLimit(rl.get("enabled").bool(true), Map.copyOf(rlEnv));

    Node qn = r.get("quotas").only(Set.of("failureMode", "keyPrefix"));
    String qfm = qn.get("failureMode").string("open");
    if (!qfm.equals("open") && !qfm.equals("closed")) {
      qn.get("failureMode").invalid(qfm, "open or closed");
    }
    SluiceConfig.Quotas quotas =
        new SluiceConfig.Quotas(qfm, qn.get("keyPrefix").string("sluice_"));

    ReplicaPolicy replicas = replicas(r.get("replicas"), pools.keySet());
    io.sluice.core.retry.RetryPolicy retries =
        RetriesSection.read(
            r.get("retries"),
            routes.stream()
                .map(SluiceConfig.RouteRule::name)
                .collect(java.util.stream.Collectors.toSet()));

    return new SluiceConfig(
        server,
        limits,
        estimation,
        Map.copyOf(pools).isEmpty() ? Map.of() : java.util.Collections.unmodifiableMap(pools),
        java.util.Collections.unmodifiableMap(classes),
        java.util.Collections.unmodifiableMap(tiers),
        tenants,
        signals,
        List.copyOf(routes),
        unmatched,
        responses,
        decisionLog,
        rateLimit,
        quotas,
        replicas,
        yaml,
        java.util.Collections.unmodifiableMap(poolModes),
        retries);
  }

  /** {@code enforce} or {@code shadow} ({@code def} when absent). */
  private static SluiceConfig.Mode mode(Node n, SluiceConfig.Mode def) {
    return n.enumValue(SluiceConfig.Mode.class, def, SluiceConfig.Mode::configName);
  }

  private static final Set<String> POOL_MODE_KEYS =
      Set.of("storeDown", "keepShareFor", "expectedReplicas", "floor");

  /**
   * The {@code replicas} section: lease settings and each pool's store-down behaviour (used when
   * the store is shared, {@code BACKEND_TYPE=redis}).
   */
  private static ReplicaPolicy replicas(Node n, Set<String> poolNames) {
    Set<String> keys = new java.util.HashSet<>(POOL_MODE_KEYS);
    keys.addAll(Set.of("leaseTtl", "renewInterval", "pools"));
    n.only(keys);
    ReplicaPolicy d = ReplicaPolicy.DEFAULT;
    Duration ttl = n.get("leaseTtl").duration(d.leaseTtl());
    if (ttl.compareTo(Duration.ofMillis(100)) < 0 || ttl.compareTo(Duration.ofMinutes(10)) > 0) {
      n.get("leaseTtl").invalid(ConfigWriter.duration(ttl), "a duration in 100ms..10m");
      ttl = d.leaseTtl();
    }
    Duration renew = n.get("renewInterval").duration(d.renewInterval());
    if (renew.compareTo(Duration.ofMillis(10)) < 0 || renew.multipliedBy(2).compareTo(ttl) > 0) {
      n.get("renewInterval")
          .invalid(
              ConfigWriter.duration(renew),
              "a duration in 10ms..half of replicas.leaseTtl (" + ConfigWriter.duration(ttl) + ")");
      renew =
          Duration.ofMillis(
              Math.max(10, Math.min(d.renewInterval().toMillis(), ttl.toMillis() / 2)));
    }
    ReplicaPolicy.PoolMode defaults = poolMode(n, ReplicaPolicy.DEFAULT_MODE, ttl);
    Map<String, ReplicaPolicy.PoolMode> perPool = new LinkedHashMap<>();
    for (var e : n.get("pools").entries().entrySet()) {
      Node p = e.getValue().only(POOL_MODE_KEYS);
      if (!poolNames.contains(e.getKey())) {
        p.error(
            p.path()
                + ": no such pool (expected: one of "
                + new java.util.TreeSet<>(poolNames)
                + ")");
        continue;
      }
      perPool.put(e.getKey(), poolMode(p, defaults, ttl));
    }
    return new ReplicaPolicy(ttl, renew, defaults, perPool);
  }

  private static ReplicaPolicy.PoolMode poolMode(
      Node n, ReplicaPolicy.PoolMode def, Duration leaseTtl) {
    ReplicaPolicy.StoreDown down =
        n.get("storeDown")
            .enumValue(
                ReplicaPolicy.StoreDown.class,
                def.storeDown(),
                e -> e.name().toLowerCase(java.util.Locale.ROOT));
    Duration keep = n.get("keepShareFor").duration(def.keepShareFor());
    if (keep.compareTo(leaseTtl) > 0) {
      n.get("keepShareFor")
          .invalid(
              ConfigWriter.duration(keep),
              "a duration up to replicas.leaseTtl ("
                  + ConfigWriter.duration(leaseTtl)
                  + "): past it the other replicas may take this one's share");
      keep = leaseTtl;
    }
    int expected = n.get("expectedReplicas").intValue(def.expectedReplicas(), 1, 10_000);
    double floor = n.get("floor").doubleValue(def.floor(), 0, 0.5);
    return new ReplicaPolicy.PoolMode(down, keep, expected, floor);
  }

  private static SluiceConfig.Server server(Node s) {
    s.only(Set.of("grpc", "admin", "shutdownGrace", "reloadInterval", "health", "warmup"));
    Node g =
        s.get("grpc")
            .only(
                Set.of(
                    "host",
                    "port",
                    "maxInboundMessageSize",
                    "tls",
                    "maxStreams",
                    "maxStreamsPerConnection",
                    "firstMessageTimeout",
                    "idleTimeout",
                    "admittedIdleTimeout",
                    "maxResetsPerWindow",
                    "resetWindow",
                    "maxHeaderListSize",
                    "permitKeepAliveTime",
                    "maxConnectionIdle"));
    Node a = s.get("admin").only(Set.of("host", "port"));
    SluiceConfig.Tls tls = null;
    Node t = g.get("tls").only(Set.of("certFile", "keyFile", "clientCaFile", "refreshInterval"));
    if (t.present()) {
      tls =
          new SluiceConfig.Tls(
              t.get("certFile").requiredString(),
              t.get("keyFile").requiredString(),
              t.get("clientCaFile").string(null),
              t.get("refreshInterval").duration(Duration.ofMinutes(1)));
    }
    return new SluiceConfig.Server(
        g.get("host").string("0.0.0.0"),
        g.get("port").intValue(8081, 0, 65535),
        a.get("host").string("0.0.0.0"),
        a.get("port").intValue(8080, 0, 65535),
        g.get("maxInboundMessageSize").bytes(16 << 20),
        s.get("shutdownGrace").duration(Duration.ofSeconds(30)),
        tls,
        s.get("reloadInterval").duration(Duration.ofSeconds(2)),
        health(s.get("health")),
        warmup(s.get("warmup")),
        streams(g),
        http2(g));
  }

  /** server.grpc HTTP/2 abuse limits ("HTTP/2 abuse limits" in docs/operations.md). */
  private static SluiceConfig.Http2 http2(Node g) {
    SluiceConfig.Http2 d = SluiceConfig.Http2.DEFAULTS;
    int resets = g.get("maxResetsPerWindow").intValue(d.maxResetsPerWindow(), 0, 100_000_000);
    Node w = g.get("resetWindow");
    Duration window = w.duration(d.resetWindow());
    if (window.compareTo(Duration.ofSeconds(1)) < 0
        || window.compareTo(Duration.ofHours(1)) > 0
        || window.toMillis() % 1000 != 0) {
      w.invalid(ConfigWriter.duration(window), "whole seconds, 1s .. 1h");
      window = d.resetWindow();
    }
    Node h = g.get("maxHeaderListSize");
    long header = h.bytes(d.maxHeaderListBytes());
    if (header < 1024 || header > (1 << 20)) {
      h.invalid(Long.toString(header), "1KiB .. 1MiB");
      header = d.maxHeaderListBytes();
    }
    Node k = g.get("permitKeepAliveTime");
    Duration keepAlive = k.duration(d.permitKeepAliveTime());
    if (keepAlive.isNegative() || keepAlive.compareTo(Duration.ofHours(2)) > 0) {
      k.invalid(ConfigWriter.duration(keepAlive), "0s .. 2h");
      keepAlive = d.permitKeepAliveTime();
    }
    return new SluiceConfig.Http2(
        resets,
        window,
        (int) header,
        keepAlive,
        boundedDuration(g.get("maxConnectionIdle"), d.maxConnectionIdle()));
  }

  private static SluiceConfig.Health health(Node h) {
    h.only(Set.of("maxHeapAfterGc", "heapAfterGcFor"));
    return new SluiceConfig.Health(
        h.get("maxHeapAfterGc").doubleValue(0.9, 0.0, 1.0),
        h.get("heapAfterGcFor").duration(Duration.ofSeconds(30)));
  }

  private static SluiceConfig.Warmup warmup(Node w) {
    w.only(Set.of("enabled", "streams", "rlsCalls", "timeout", "storeTimeout"));
    return new SluiceConfig.Warmup(
        w.get("enabled").bool(true),
        w.get("streams").intValue(24, 0, 10_000),
        w.get("rlsCalls").intValue(16, 0, 10_000),
        w.get("timeout").duration(Duration.ofSeconds(20)),
        w.get("storeTimeout").duration(Duration.ofSeconds(30)));
  }

  /** server.grpc stream limits (docs/configuration.md, "Stream limits" in docs/operations.md). */
  private static SluiceConfig.Streams streams(Node g) {
    SluiceConfig.Streams d = SluiceConfig.Streams.DEFAULTS;
    return new SluiceConfig.Streams(
        g.get("maxStreams").intValue(d.maxStreams(), 1, 10_000_000),
        g.get("maxStreamsPerConnection").intValue(d.maxStreamsPerConnection(), 1, 10_000_000),
        boundedDuration(g.get("firstMessageTimeout"), d.firstMessageTimeout()),
        boundedDuration(g.get("idleTimeout"), d.idleTimeout()),
        boundedDuration(g.get("admittedIdleTimeout"), d.admittedIdleTimeout()));
  }

  private static Duration boundedDuration(Node n, Duration def) {
    Duration v = n.duration(def);
    if (v.isNegative() || v.compareTo(Duration.ofDays(1)) > 0) {
      n.invalid(v.toString(), "0s (off) .. 24h");
      return def;
    }
    return v;
  }

  private static SluiceConfig.Estimation estimation(Node e) {
    e.only(
        Set.of(
            "bytesPerToken",
            "imageTokens",
            "attachmentTokens",
            "toolDefinitionOverheadTokens",
            "perMessageOverheadTokens",
            "replyPrimingTokens",
            "maxJsonDepth",
            "maxTokenizeChars",
            "tokenCacheChars",
            "tokenCacheMinChars",
            "defaultInputTokens",
            "learnedReserve"));
    Node lr =
        e.get("learnedReserve")
            .only(
                Set.of(
                    "enabled",
                    "warmup",
                    "halfLife",
                    "maxKeys",
                    "tenantKeys",
                    "confidence",
                    "poolPrior",
                    "shareInterval",
                    "shareWindow"));
    OutputReserves.Settings d = OutputReserves.Settings.DEFAULTS;
    long shareInterval =
        lr.get("shareInterval").duration(Duration.ofMillis(d.shareIntervalMillis())).toMillis();
    if (shareInterval < 100 || shareInterval > 600_000) {
      lr.get("shareInterval")
          .invalid(
              ConfigWriter.duration(Duration.ofMillis(shareInterval)), "a duration in 100ms..10m");
      shareInterval = d.shareIntervalMillis();
    }
    long shareWindow =
        lr.get("shareWindow").duration(Duration.ofMillis(d.shareWindowMillis())).toMillis();
    if (shareWindow < shareInterval || shareWindow > 7 * 86_400_000L) {
      lr.get("shareWindow")
          .invalid(
              ConfigWriter.duration(Duration.ofMillis(shareWindow)),
              "a duration in estimation.learnedReserve.shareInterval ("
                  + ConfigWriter.duration(Duration.ofMillis(shareInterval))
                  + ")..168h");
      shareWindow = Math.max(shareInterval, d.shareWindowMillis());
    }
    OutputReserves.Settings learned =
        OutputReserves.Settings.builder()
            .enabled(lr.get("enabled").bool(d.enabled()))
            .warmup(lr.get("warmup").intValue(d.warmup(), 1, 1_000_000))
            .halfLife(lr.get("halfLife").intValue(d.halfLife(), 1, 10_000_000))
            .maxKeys(lr.get("maxKeys").intValue(d.maxKeys(), 1, 1_000_000))
            .tenantKeys(lr.get("tenantKeys").bool(d.tenantKeys()))
            .confidence(lr.get("confidence").doubleValue(d.confidence(), 0.5, 0.999))
            .poolPrior(lr.get("poolPrior").bool(d.poolPrior()))
            .shareIntervalMillis(shareInterval)
            .shareWindowMillis(shareWindow)
            .build();
    return new SluiceConfig.Estimation(
        e.get("bytesPerToken").doubleValue(4.0, 0.5, 64),
        e.get("imageTokens").longValue(765, 0, 1_000_000),
        e.get("attachmentTokens").longValue(1000, 0, 1_000_000),
        e.get("toolDefinitionOverheadTokens").longValue(10, 0, 100_000),
        e.get("perMessageOverheadTokens").longValue(4, 0, 10_000),
        e.get("replyPrimingTokens").longValue(3, 0, 10_000),
        e.get("maxJsonDepth").intValue(64, 1, 512),
        e.get("maxTokenizeChars").longValue(16384, 0, 1L << 30),
        e.get("tokenCacheChars").longValue(TokenCountCache.DEFAULT_MAX_CHARS, 0, 1L << 32),
        e.get("tokenCacheMinChars").intValue(TokenCountCache.DEFAULT_MIN_CHARS, 0, 1 << 20),
        // charged when a request with a body is decided at its headers and no content-length
        // says how big it is (STREAMED/NONE body modes): never 0, which would admit any size
        e.get("defaultInputTokens").longValue(1024, 1, 10_000_000),
        learned);
  }

  private static PoolPolicy pool(String name, Node p) {
    p.only(
        Set.of(
            "capacity",
            "maxRequests",
            "inputWeight",
            "outputWeight",
            "retryAfter",
            "maxMessageTimeout",
            "holdMargin",
            "defaultServiceTime",
            "adaptive",
            "mode",
            "fanout",
            "workflow",
            "enginePriority"));
    Node ra = p.get("retryAfter").only(Set.of("min", "max", "jitter"));
    EnginePriority enginePriority = enginePriority(p.get("enginePriority"));
    FanOutPolicy fanout = fanout(p.get("fanout"));
    WorkflowPolicy workflow = workflow(p.get("workflow"));
    if (!p.get("capacity").present()) {
      p.get("capacity").error(p.path() + ".capacity: missing (expected: work units > 0)");
      return null;
    }
    Duration mmt = p.get("maxMessageTimeout").duration(Duration.ZERO);
    if (mmt.compareTo(Duration.ofHours(1)) > 0) {
      p.get("maxMessageTimeout").invalid(mmt.toString(), "0s .. 3600s (Envoy's limit)");
    }
    long capacity = p.get("capacity").longValue(1, 1, Long.MAX_VALUE / 4);
    int maxRequests = p.get("maxRequests").intValue(0, 0, 10_000_000);
    AdaptivePolicy adaptive = adaptive(p.get("adaptive"), capacity, maxRequests);
    return p.build(
        () ->
            new PoolPolicy(
                name,
                capacity,
                maxRequests,
                p.get("inputWeight").doubleValue(1.0, 0, 1000),
                p.get("outputWeight").doubleValue(1.0, 0, 1000),
                ra.get("min").duration(Duration.ofSeconds(1)),
                ra.get("max").duration(Duration.ofSeconds(60)),
                mmt,
                ra.get("jitter").doubleValue(0.2, 0.0, 0.99),
                p.get("holdMargin").duration(Duration.ofMillis(100)),
                p.get("defaultServiceTime").duration(Duration.ofSeconds(2)),
                adaptive,
                fanout,
                workflow,
                enginePriority));
  }

  /** {@code pools.<name>.fanout}: work units per source, all 0 (the default) = no fan-out work. */
  private static FanOutPolicy fanout(Node f) {
    f.only(Set.of("perTool", "toolChoiceRequired", "parallelToolCalls", "perDeclaredCall"));
    if (!f.present()) {
      return FanOutPolicy.NONE;
    }
    long max = FanOutPolicy.MAX_WORK;
    return new FanOutPolicy(
        f.get("perTool").longValue(0, 0, max),
        f.get("toolChoiceRequired").longValue(0, 0, max),
        f.get("parallelToolCalls").longValue(0, 0, max),
        f.get("perDeclaredCall").longValue(0, 0, max));
  }

  /** {@code pools.<name>.workflow}: a workflow's budget in the pool, 0 = off (the default). */
  private static WorkflowPolicy workflow(Node w) {
    w.only(Set.of("maxRequests", "maxWork"));
    if (!w.present()) {
      return WorkflowPolicy.OFF;
    }
    return new WorkflowPolicy(
        w.get("maxRequests").intValue(0, 0, 10_000_000),
        w.get("maxWork").longValue(0, 0, Long.MAX_VALUE / 4));
  }

  /**
   * {@code pools.<name>.adaptive}: absent or {@code enabled: false} is {@link AdaptivePolicy#OFF};
   * the floors default to a quarter of the pool's numbers.
   */
  private static AdaptivePolicy adaptive(Node a, long capacity, int maxRequests) {
    a.only(
        Set.of(
            "enabled",
            "minCapacity",
            "minRequests",
            "interval",
            "minSamples",
            "latency",
            "backoff",
            "maxPause",
            "overloadStatuses",
            "start"));
    Node lat = a.get("latency").only(Set.of("growBelow", "shrinkAbove", "baselineWindow"));
    if (!a.present() || !a.get("enabled").bool(false)) {
      return AdaptivePolicy.OFF;
    }
    AdaptivePolicy off = AdaptivePolicy.OFF;
    Set<Integer> statuses = new java.util.TreeSet<>();
    Node os = a.get("overloadStatuses");
    if (!os.present()) {
      statuses.addAll(off.overloadStatuses());
    } else if (!os.json().isArray() || os.json().isEmpty()) {
      os.invalid(os.json().toString(), "a list of HTTP statuses, e.g. [429, 503, 529]");
    } else {
      for (com.fasterxml.jackson.databind.JsonNode v : os.json()) {
        if (!v.isIntegralNumber() || v.asInt() < 400 || v.asInt() > 599) {
          os.invalid(v.toString(), "HTTP statuses 400 .. 599");
        } else {
          statuses.add(v.asInt());
        }
      }
    }
    long minCapacity = a.get("minCapacity").longValue(Math.max(1, capacity / 4), 1, capacity);
    int minRequests =
        maxRequests > 0
            ? a.get("minRequests").intValue(Math.max(1, maxRequests / 4), 1, maxRequests)
            : a.get("minRequests").intValue(0, 0, 0);
    try {
      return new AdaptivePolicy(
          true,
          minCapacity,
          minRequests,
          a.get("interval").duration(off.interval()),
          a.get("minSamples").intValue(off.minSamples(), 1, 100_000),
          lat.get("growBelow").doubleValue(off.growBelow(), 1.0, 100),
          lat.get("shrinkAbove").doubleValue(off.shrinkAbove(), 1.0, 100),
          a.get("backoff").doubleValue(off.backoff(), 0.01, 0.99),
          a.get("maxPause").duration(off.maxPause()),
          lat.get("baselineWindow").duration(off.baselineWindow()),
          statuses.isEmpty() ? off.overloadStatuses() : statuses,
          adaptiveStart(a.get("start")));
    } catch (IllegalArgumentException e) {
      // the record names the field under "adaptive."; the error names its whole path
      a.error(a.path() + e.getMessage().substring("adaptive".length()));
      return AdaptivePolicy.OFF;
    }
  }

  /**
   * {@code adaptive.start}: {@code ceiling} (the default), {@code floor}, or a fraction of the
   * ceiling in [0, 1].
   */
  private static double adaptiveStart(Node n) {
    if (!n.present()) {
      return AdaptivePolicy.START_CEILING;
    }
    if (n.json().isNumber()) {
      return n.doubleValue(AdaptivePolicy.START_CEILING, 0.0, 1.0);
    }
    String v = n.string("ceiling").trim().toLowerCase(java.util.Locale.ROOT);
    return switch (v) {
      case "ceiling" -> AdaptivePolicy.START_CEILING;
      case "floor" -> AdaptivePolicy.START_FLOOR;
      default -> {
        n.invalid(n.json().toString(), "ceiling, floor or a fraction of the ceiling in 0..1");
        yield AdaptivePolicy.START_CEILING;
      }
    };
  }

  private static ClassPolicy requestClass(String name, Node c) {
    c.only(
        Set.of(
            "rank",
            "reservedShare",
            "lendableShare",
            "borrow",
            "deadline",
            "maxQueueWait",
            "defaultOutputTokens",
            "maxOutputTokens",
            "shedStatus",
            "queue",
            "reserveQuantile",
            "degrade"));
    Node q = c.get("queue").only(Set.of("workShare", "maxItems", "tenantShare"));
    DegradePolicy degrade = degrade(c.get("degrade"));
    double reserved = c.get("reservedShare").doubleValue(0.0, 0, 1);
    return c.build(
        () ->
            new ClassPolicy(
                name,
                c.get("rank").intValue(0, 0, 1000),
                reserved,
                c.get("lendableShare").doubleValue(0.0, 0, 1),
                c.get("borrow").bool(true),
                c.get("deadline").duration(Duration.ofSeconds(60)),
                c.get("maxQueueWait").duration(Duration.ZERO),
                c.get("defaultOutputTokens").longValue(1024, 0, 10_000_000),
                c.get("maxOutputTokens").longValue(8192, 0, 10_000_000),
                c.get("shedStatus").intValue(503, 100, 599),
                q.get("workShare").doubleValue(2.0, 0.0, 100.0),
                q.get("maxItems").intValue(1000, 1, 10_000_000),
                q.get("tenantShare").doubleValue(0.5, 0.0, 1.0),
                c.get("reserveQuantile")
                    .doubleValue(ClassPolicy.DEFAULT_RESERVE_QUANTILE, 0.5, 0.999),
                degrade));
  }

  /** An HTTP header name (RFC 9110 token, lower case). */
  private static final java.util.regex.Pattern TOKEN =
      java.util.regex.Pattern.compile("[a-z0-9!#$%&'*+.^_`|~-]+");

  /**
   * {@code classes.<name>.degrade}: absent is {@link DegradePolicy#OFF}; a ladder needs at least
   * one rung and one trigger. Reroute targets are checked against the pools afterwards.
   */
  private static DegradePolicy degrade(Node d) {
    d.only(Set.of("waitAbove", "headroomBelow", "ladder"));
    if (!d.present()) {
      return DegradePolicy.OFF;
    }
    Duration wait = d.get("waitAbove").duration(Duration.ZERO);
    if (wait.isNegative()) {
      d.get("waitAbove").invalid(ConfigWriter.duration(wait), "a duration >= 0s (0s = off)");
      wait = Duration.ZERO;
    }
    double headroom = d.get("headroomBelow").doubleValue(0.0, 0.0, 1.0);
    if (wait.isZero() && headroom == 0) {
      d.error(
          d.path()
              + ": no trigger (expected: waitAbove > 0s and/or headroomBelow > 0, e.g. waitAbove:"
              + " 2s)");
    }
    List<DegradePolicy.Rung> rungs = new ArrayList<>();
    Set<String> seen = new java.util.HashSet<>();
    for (Node item : d.get("ladder").items()) {
      item.only(Set.of("concise", "reroute"));
      if (item.json().isObject()
          && item.json().size() == 1
          && !item.get("concise").present()
          && !item.get("reroute").present()) {
        continue; // an unknown rung: named by only() above
      }
      if (!item.json().isObject() || item.json().size() != 1) {
        item.invalid(
            String.valueOf(item.json()),
            "exactly one of concise: {maxOutputTokens, instruction} or reroute: {pool, header,"
                + " value, model}");
        continue;
      }
      DegradePolicy.Rung rung = null;
      if (item.get("concise").present()) {
        Node c = item.get("concise").only(Set.of("maxOutputTokens", "instruction", "capField"));
        if (!c.get("maxOutputTokens").present()) {
          c.error(c.path() + ".maxOutputTokens: missing (expected: output tokens >= 1)");
          continue;
        }
        String capField = c.get("capField").string(null);
        if (capField != null
            && !Set.of("max_tokens", "max_completion_tokens", "max_output_tokens")
                .contains(capField)) {
          c.get("capField")
              .invalid(capField, "max_tokens, max_completion_tokens or max_output_tokens");
          capField = null;
        }
        rung =
            new DegradePolicy.Concise(
                c.get("maxOutputTokens").longValue(256, 1, 10_000_000),
                c.get("instruction").string(null),
                capField);
      } else {
        Node rr = item.get("reroute").only(Set.of("pool", "header", "value", "model"));
        String pool = rr.get("pool").requiredString();
        String header = rr.get("header").string(null);
        String value = rr.get("value").string(null);
        String model = rr.get("model").string(null);
        if (header != null) {
          header = header.trim().toLowerCase(Locale.ROOT);
          if (!TOKEN.matcher(header).matches() || header.startsWith(":")) {
            rr.get("header").invalid(header, "an HTTP header name (the route's routing header)");
          }
        }
        if ((header == null) != (value == null)) {
          rr.error(rr.path() + ": header and value go together (expected: both, or neither)");
          continue;
        }
        if (header == null && model == null) {
          rr.error(
              rr.path()
                  + ": nothing sends the request elsewhere (expected: header and value, and/or"
                  + " model)");
          continue;
        }
        if (pool.isEmpty()) {
          continue;
        }
        rung = new DegradePolicy.Reroute(pool, header, value, model);
      }
      if (!seen.add(rung.name())) {
        item.invalid(rung.name(), "each rung at most once");
        continue;
      }
      rungs.add(rung);
    }
    if (rungs.isEmpty()) {
      d.get("ladder").error(d.path() + ".ladder: empty (expected: at least one rung)");
      return DegradePolicy.OFF;
    }
    return new DegradePolicy(wait, headroom, rungs);
  }

  /** {@code pools.<name>.enginePriority}: absent is {@link EnginePriority#OFF}. */
  private static EnginePriority enginePriority(Node n) {
    n.only(Set.of("preset", "field", "header", "values"));
    if (!n.present()) {
      return EnginePriority.OFF;
    }
    String presetName = n.get("preset").string("none");
    EnginePriority.Preset preset = EnginePriority.Preset.of(presetName);
    if (preset == null) {
      n.get("preset").invalid(presetName, "one of none, vllm, sglang, tensorrt-llm");
      return EnginePriority.OFF;
    }
    String field = n.get("field").string(preset == EnginePriority.Preset.NONE ? null : "priority");
    if (field != null && field.isBlank()) {
      field = null;
    }
    String header = n.get("header").string(null);
    if (header != null) {
      header = header.trim().toLowerCase(Locale.ROOT);
      if (!TOKEN.matcher(header).matches()) {
        n.get("header").invalid(header, "an HTTP header name");
        header = null;
      }
    }
    Map<String, String> values = new LinkedHashMap<>();
    for (var e : n.get("values").entries().entrySet()) {
      com.fasterxml.jackson.databind.JsonNode v = e.getValue().json();
      if (!v.isNumber()) {
        e.getValue().invalid(String.valueOf(v), "a number (the engine's priority value)");
        continue;
      }
      if (preset == EnginePriority.Preset.TENSORRT_LLM && (v.asDouble() < 0 || v.asDouble() > 1)) {
        e.getValue().invalid(v.asText(), "0.0 .. 1.0 (TensorRT-LLM's priority range)");
        continue;
      }
      values.put(e.getKey(), v.asText());
    }
    if (field == null && header == null) {
      n.error(n.path() + ": neither field nor header (expected: field: priority, or a header)");
    }
    if (preset == EnginePriority.Preset.NONE && values.isEmpty()) {
      n.error(
          n.path()
              + ": no preset and no values (expected: preset: vllm|sglang|tensorrt-llm,"
              + " or values: {<class>: <number>})");
    }
    return new EnginePriority(preset, field, header, values);
  }

  private static SluiceConfig.Tenants tenants(Node t, Map<String, TierPolicy> tiers) {
    t.only(
        Set.of("anonymousTier", "unknown", "unknownTier", "known", "allowUnknownAboveAnonymous"));
    String first = tiers.keySet().iterator().next();
    String anon = t.get("anonymousTier").string(first);
    String unknownTier = t.get("unknownTier").string(anon);
    checkTier(t.get("anonymousTier"), anon, tiers);
    checkTier(t.get("unknownTier"), unknownTier, tiers);
    SluiceConfig.UnknownAction action =
        t.get("unknown")
            .enumValue(
                SluiceConfig.UnknownAction.class,
                SluiceConfig.UnknownAction.ADMIT,
                a -> a.name().toLowerCase(Locale.ROOT));
    Map<String, String> known = new LinkedHashMap<>();
    for (var e : t.get("known").entries().entrySet()) {
      Node k = e.getValue().only(Set.of("tier"));
      String tier = k.get("tier").requiredString();
      checkTier(k.get("tier"), tier, tiers);
      known.put(e.getKey(), tier);
    }
    boolean allowAbove = t.get("allowUnknownAboveAnonymous").bool(false);
    TierPolicy anonTier = tiers.get(anon);
    TierPolicy unknown = tiers.get(unknownTier);
    if (action == SluiceConfig.UnknownAction.ADMIT
        && !allowAbove
        && anonTier != null
        && unknown != null) {
      String better = betterThan(unknown, anonTier);
      if (better != null) {
        t.get("unknownTier")
            .invalid(
                unknownTier,
                "a tier no better than anonymousTier "
                    + anon
                    + " ("
                    + better
                    + "; a client that makes up a tenant id would get it), e.g. unknownTier: "
                    + anon
                    + ", or unknown: reject, or tenants.allowUnknownAboveAnonymous: true");
      }
    }
    return new SluiceConfig.Tenants(anon, action, unknownTier, Map.copyOf(known), allowAbove);
  }

  /**
   * Why tier {@code a} is better than {@code b} for its tenant (higher weight, a looser concurrency
   * cap, a larger or no budget), or null when it is not.
   */
  static String betterThan(TierPolicy a, TierPolicy b) {
    List<String> why = new ArrayList<>();
    if (a.weight() > b.weight()) {
      why.add("weight " + fmt(a.weight()) + " > " + fmt(b.weight()));
    }
    String cap = looser("maxInFlight", a.maxInFlight(), b.maxInFlight());
    if (cap != null) {
      why.add(cap);
    }
    for (String w :
        new String[] {
          looser("rpm", a.requestsPerMinute(), b.requestsPerMinute()),
          looser("inputTpm", a.inputTokensPerMinute(), b.inputTokensPerMinute()),
          looser("outputTpm", a.outputTokensPerMinute(), b.outputTokensPerMinute())
        }) {
      if (w != null) {
        why.add(w);
      }
    }
    return why.isEmpty() ? null : String.join(", ", why);
  }

  /** For limits where 0 means none: is {@code a} looser than {@code b}? */
  private static String looser(String name, long a, long b) {
    if (b == 0) {
      return null; // b has no limit: nothing is looser
    }
    if (a == 0) {
      return name + " unlimited > " + b;
    }
    return a > b ? name + " " + a + " > " + b : null;
  }

  private static String fmt(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static void checkTier(Node at, String tier, Map<String, TierPolicy> tiers) {
    if (!tiers.containsKey(tier)) {
      at.invalid(tier, "a tier defined under tiers: " + String.join(", ", tiers.keySet()));
    }
  }

  private static Map<Signal, List<Source>> signals(Node s) {
    Map<String, Signal> byKey = new LinkedHashMap<>();
    for (Signal sig : Signal.values()) {
      byKey.put(sig.key(), sig);
    }
    s.only(byKey.keySet());
    Map<Signal, List<Source>> out = new EnumMap<>(Signal.class);
    for (Signal sig : Signal.values()) {
      out.put(sig, List.of());
    }
    for (var e : s.entries().entrySet()) {
      Signal sig = byKey.get(e.getKey());
      if (sig == null) {
        continue;
      }
      List<Source> sources = new ArrayList<>();
      for (Node item : e.getValue().items()) {
        Source src = source(item);
        if (src != null) {
          sources.add(src);
        }
      }
      out.put(sig, List.copyOf(sources));
    }
    // retries (issue 19): read from the client's own headers unless the policy says otherwise;
    // a client can only hurt itself by claiming to be a retry (docs/configuration.md, "Retries")
    if (!s.get(Signal.RETRY_COUNT.key()).present()) {
      out.put(Signal.RETRY_COUNT, List.of(new Source.Header("x-stainless-retry-count")));
    }
    if (!s.get(Signal.ATTEMPT_COUNT.key()).present()) {
      out.put(Signal.ATTEMPT_COUNT, List.of(new Source.Header("x-envoy-attempt-count")));
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  private static Source source(Node n) {
    n.only(Set.of("metadata", "header", "dynamicMetadata", "attribute"));
    if (!n.present() || !n.json().isObject() || n.json().size() != 1) {
      n.invalid(
          String.valueOf(n.json()),
          "exactly one of metadata: <key>, header: <name>, dynamicMetadata: {namespace, path},"
              + " attribute: <expression>");
      return null;
    }
    if (n.get("metadata").present()) {
      return new Source.Metadata(n.get("metadata").requiredString().toLowerCase(Locale.ROOT));
    }
    if (n.get("header").present()) {
      return new Source.Header(n.get("header").requiredString().toLowerCase(Locale.ROOT));
    }
    if (n.get("attribute").present()) {
      return new Source.Attribute(n.get("attribute").requiredString());
    }
    Node dm = n.get("dynamicMetadata").only(Set.of("namespace", "path"));
    String ns = dm.get("namespace").requiredString();
    List<String> path = new ArrayList<>();
    Node p = dm.get("path");
    if (p.present() && p.json().isTextual()) {
      path.addAll(List.of(p.json().asText().split("\\.")));
    } else {
      for (Node seg : p.items()) {
        path.add(seg.requiredString());
      }
    }
    if (path.isEmpty()) {
      p.invalid("[]", "a key path such as [payload, tenant] or payload.tenant");
    }
    return new Source.DynamicMetadata(ns, List.copyOf(path));
  }

  private static SluiceConfig.RouteRule route(
      Node n, Set<String> pools, Set<String> classes, String defaultPool) {
    n.only(Set.of("name", "match", "pool", "class", "format", "estimate", "mode", "degrade"));
    Node m = n.get("match").only(Set.of("route", "path", "pathPrefix"));
    String name = n.get("name").requiredString();
    String pool = n.get("pool").string(defaultPool);
    String cls = n.get("class").requiredString();
    checkRef(n.get("pool"), pool, pools, "pools");
    checkRef(n.get("class"), cls, classes, "classes");
    String mr = m.get("route").string(null);
    String mp = m.get("path").string(null);
    String mpp = m.get("pathPrefix").string(null);
    if (mr == null && mp == null && mpp == null) {
      m.invalid(String.valueOf(m.json()), "at least one of route, path, pathPrefix");
    }
    return new SluiceConfig.RouteRule(
        name,
        mr,
        mp,
        mpp,
        pool,
        cls,
        format(n.get("format")),
        estimateFrom(n.get("estimate")),
        mode(n.get("mode"), null),
        n.get("degrade").bool(true));
  }

  private static SluiceConfig.Unmatched unmatched(
      Node n, Set<String> pools, Set<String> classes, String defaultPool) {
    n.only(Set.of("action", "pool", "class", "format", "estimate"));
    String action = n.get("action").string("admit");
    if (!action.equals("admit") && !action.equals("reject")) {
      n.get("action").invalid(action, "admit or reject");
    }
    String pool = n.get("pool").string(defaultPool);
    String fallbackClass =
        classes.isEmpty() ? "" : new ArrayList<>(classes).get(classes.size() - 1);
    String cls = n.get("class").string(fallbackClass);
    if (action.equals("admit") && !classes.isEmpty() && !pools.isEmpty()) {
      checkRef(n.get("pool"), pool, pools, "pools");
      checkRef(n.get("class"), cls, classes, "classes");
    }
    return new SluiceConfig.Unmatched(
        action.equals("reject"),
        pool,
        cls,
        format(n.get("format")),
        estimateFrom(n.get("estimate")));
  }

  private static void checkRef(Node at, String value, Set<String> names, String section) {
    if (!names.contains(value)) {
      at.invalid(value, "a name defined under " + section + ": " + String.join(", ", names));
    }
  }

  private static RequestFormat format(Node n) {
    if (!n.present()) {
      return RequestFormat.AUTO;
    }
    try {
      return RequestFormat.fromConfigName(n.string("auto"));
    } catch (IllegalArgumentException e) {
      List<String> names = new ArrayList<>();
      for (RequestFormat f : RequestFormat.values()) {
        names.add(f.configName());
      }
      n.invalid(n.json().toString(), "one of " + String.join(", ", names));
      return RequestFormat.AUTO;
    }
  }

  private static EstimateFrom estimateFrom(Node n) {
    return n.enumValue(
        EstimateFrom.class, EstimateFrom.BODY, e -> e.name().toLowerCase(Locale.ROOT));
  }
}

package io.sluice.config;

import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.TierPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One immutable, validated snapshot of Sluice's configuration. Built only by {@link ConfigLoader};
 * published as a single reference so readers never lock. The sections features register ({@link
 * ConfigSection}) are held in {@code sections}, read with {@link #section}.
 */
public record SluiceConfig(
    Server server,
    Limits limits,
    Estimation estimation,
    Map<String, PoolPolicy> pools,
    Map<String, ClassPolicy> classes,
    Map<String, TierPolicy> tiers,
    Tenants tenants,
    Map<Signal, List<Source>> signals,
    List<RouteRule> routes,
    Unmatched unmatched,
    Responses responses,
    DecisionLog decisionLog,
    RateLimit rateLimit,
    Quotas quotas,
    io.sluice.core.share.ReplicaPolicy replicas,
    String yaml,
    Map<String, Mode> poolModes,
    SectionValues sections) {

  /** The value of a registered section ({@link ConfigSection}), or its defaults. */
  public <T> T section(ConfigSection<T> s) {
    return sections.get(s);
  }

  /**
   * Observe-only rollout: {@code pools.<name>.mode} and {@code routes[].mode}. {@link #SHADOW}
   * decides and records every request as {@link #ENFORCE} would, and admits at once what
   * enforcement would refuse or queue (docs/configuration.md, shadow mode).
   */
  public enum Mode {
    ENFORCE,
    SHADOW;

    /** {@code enforce} / {@code shadow}, as written in the policy. */
    public String configName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** The mode of pool {@code name} ({@code enforce} unless it says {@code shadow}). */
  public Mode poolMode(String name) {
    Mode m = poolModes.get(name);
    return m == null ? Mode.ENFORCE : m;
  }

  /**
   * Per-tenant RPM/TPM budgets (tier keys {@code rpm}, {@code inputTpm}, {@code outputTpm}) kept in
   * the rate limit service's store (memory, or Redis with {@code BACKEND_TYPE=redis}).
   */
  public record Quotas(FailureMode failureMode, String keyPrefix) {
    public static final Quotas DEFAULTS = new Quotas(FailureMode.OPEN, "sluice_");

    /** What a quota check does while the store cannot answer: admit ({@code open}) or refuse. */
    public enum FailureMode {
      OPEN,
      CLOSED;

      /** {@code open} / {@code closed}, as written in the policy. */
      public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
      }
    }
  }

  /**
   * The rate limit service (envoyproxy/ratelimit drop-in). {@code env} holds settings with the
   * reference's names (RUNTIME_ROOT, BACKEND_TYPE, REDIS_URL, ...); process environment variables
   * of the same name win.
   */
  public record RateLimit(boolean enabled, Map<String, String> env) {
    public static final RateLimit DEFAULTS = new RateLimit(true, Map.of());
  }

  /** Process settings: ports, bind addresses, grace period, TLS. Read once at start. */
  public record Server(
      String grpcHost,
      int grpcPort,
      String adminHost,
      int adminPort,
      long maxInboundMessageBytes,
      Duration shutdownGrace,
      @Nullable Tls tls,
      Duration reloadInterval,
      Health health,
      Warmup warmup,
      Streams streams,
      Http2 http2,
      AdminControl adminControl) {
    /** Every setting at its default; TLS off. */
    public static final Server DEFAULTS =
        new Server(
            "0.0.0.0",
            8081,
            "0.0.0.0",
            8080,
            16 << 20,
            Duration.ofSeconds(30),
            null,
            Duration.ofSeconds(2),
            Health.DEFAULTS,
            Warmup.DEFAULTS,
            Streams.DEFAULTS,
            Http2.DEFAULTS,
            AdminControl.DEFAULTS);
  }

  /**
   * The admin routes that change state (the rate limit service's {@code POST /json}), {@code
   * server.admin.control}: with {@code port} unset ({@value #SHARED_PORT}) they are served on the
   * admin port to loopback callers only; with a port (0: any free one) on a listener of their own
   * bound to {@code host} (loopback by default) and not on the admin port; not at all when {@code
   * enabled} is false.
   */
  public record AdminControl(boolean enabled, String host, int port) {
    public static final int SHARED_PORT = -1;
    public static final AdminControl DEFAULTS = new AdminControl(true, "127.0.0.1", SHARED_PORT);

    /** Whether the routes have a listener of their own. */
    public boolean ownListener() {
      return enabled && port != SHARED_PORT;
    }
  }

  /**
   * HTTP/2 abuse limits of the gRPC port (server.grpc), per connection: more than {@code
   * maxResetsPerWindow} RST_STREAM frames (received or sent) within {@code resetWindow} earns a
   * GOAWAY ENHANCE_YOUR_CALM and the connection is closed (rapid reset; 0 turns it off); a header
   * list (gRPC metadata) over {@code maxHeaderListBytes} is refused with HTTP 431 on that stream;
   * client keepalive pings more often than {@code permitKeepAliveTime} earn GOAWAY too_many_pings;
   * a connection without streams for {@code maxConnectionIdle} is closed gracefully (0 off). Before
   * grpc's codec, a connection on which the client reset {@code maxPrematureResets} streams that
   * never carried a DATA frame, and at least {@code prematureResetRatio} of the streams it opened,
   * gets GOAWAY ENHANCE_YOUR_CALM and is closed without decoding the rest of its read (0 off).
   */
  public record Http2(
      int maxResetsPerWindow,
      Duration resetWindow,
      int maxHeaderListBytes,
      Duration permitKeepAliveTime,
      Duration maxConnectionIdle,
      int maxPrematureResets,
      double prematureResetRatio) {
    public static final Http2 DEFAULTS =
        new Http2(
            40_000,
            Duration.ofSeconds(1),
            8 << 10,
            Duration.ofSeconds(10),
            Duration.ZERO,
            1_000,
            0.5);
  }

  /**
   * Process health beyond "the process answers": {@code /healthz} and gRPC health fail while more
   * than {@code maxHeapAfterGc} of the heap (the old generation's maximum) is still used after
   * garbage collection for {@code heapAfterGcFor}, so the kubelet restarts a JVM in a GC death
   * spiral before it runs out of memory. {@code maxHeapAfterGc} 0 turns the check off.
   */
  public record Health(double maxHeapAfterGc, Duration heapAfterGcFor) {
    public static final Health DEFAULTS = new Health(0.9, Duration.ofSeconds(30));
  }

  /**
   * Warm-up before readiness: {@code streams} synthetic ext_proc streams and {@code rlsCalls} rate
   * limit calls through the real handlers on an isolated runtime (own pools, quotas, metrics, no
   * decision log) before gRPC health and {@code /readyz} report SERVING, at most {@code timeout}.
   * Readiness also waits up to {@code storeTimeout} for the rate limit store to be ready.
   */
  public record Warmup(
      boolean enabled, int streams, int rlsCalls, Duration timeout, Duration storeTimeout) {
    public static final Warmup DEFAULTS =
        new Warmup(true, 24, 16, Duration.ofSeconds(20), Duration.ofSeconds(30));
  }

  /**
   * Self-protection of the gRPC port (server.grpc): how many ext_proc streams may be open in total
   * and per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS), and how long a stream may stay
   * silent: before its first message, before its request is decided, and after admission (when it
   * legitimately waits for the upstream). A duration of 0 turns that bound off.
   */
  public record Streams(
      int maxStreams,
      int maxStreamsPerConnection,
      Duration firstMessageTimeout,
      Duration idleTimeout,
      Duration admittedIdleTimeout) {
    public static final Streams DEFAULTS =
        new Streams(
            50_000, 10_000, Duration.ofSeconds(10), Duration.ofMinutes(2), Duration.ofMinutes(15));
  }

  /**
   * TLS on the gRPC port from PEM files, re-read every {@code refreshInterval}. With {@code
   * clientCaFile} set, clients (Envoy) must present a certificate signed by it (mTLS).
   */
  public record Tls(
      String certFile, String keyFile, @Nullable String clientCaFile, Duration refreshInterval) {
    /** How often the PEM files are re-read when the policy does not say. */
    public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofMinutes(1);
  }

  /** Request envelope limits. */
  public record Limits(long maxBodyBytes) {
    public static final Limits DEFAULTS = new Limits(8 << 20);
  }

  /** Token estimation knobs (see docs/estimation.md). */
  public record Estimation(
      double bytesPerToken,
      long imageTokens,
      long attachmentTokens,
      long toolDefinitionOverheadTokens,
      long perMessageOverheadTokens,
      long replyPrimingTokens,
      int maxJsonDepth,
      long maxTokenizeChars,
      long tokenCacheChars,
      int tokenCacheMinChars,
      long defaultInputTokens,
      io.sluice.core.estimate.OutputReserves.Settings learnedReserve) {
    /**
     * Every knob at its default. {@code defaultInputTokens} is charged when a request with a body
     * is decided at its headers and no content-length says how big it is (STREAMED/NONE body
     * modes): never 0, which would admit any size.
     */
    public static final Estimation DEFAULTS =
        new Estimation(
            4.0,
            765,
            1000,
            10,
            4,
            3,
            64,
            16384,
            io.sluice.core.estimate.TokenCountCache.DEFAULT_MAX_CHARS,
            io.sluice.core.estimate.TokenCountCache.DEFAULT_MIN_CHARS,
            1024,
            io.sluice.core.estimate.OutputReserves.Settings.DEFAULTS);
  }

  /**
   * Tenant resolution: who is anonymous, what unknown tenants get, known tenants' tiers. {@code
   * allowUnknownAboveAnonymous}: whether {@code unknownTier} may be better than {@code
   * anonymousTier} (otherwise inventing a tenant id would be an upgrade; a config error).
   */
  public record Tenants(
      String anonymousTier,
      UnknownAction unknown,
      String unknownTier,
      Map<String, String> known,
      boolean allowUnknownAboveAnonymous) {}

  /** What to do with a tenant id that is not in {@code tenants.known}. */
  public enum UnknownAction {
    ADMIT,
    REJECT
  }

  /**
   * A named value Sluice reads from trusted sources only ({@code signals.<key>}): one of the
   * built-in ones ({@link #BUILT_IN}), or one a registered section's feature reads ({@link
   * ConfigSection#declaredSignals}). A signal is its key: two with the same key are equal.
   * Immutable.
   */
  public static final class Signal {
    /** Who pays: a client must not choose it. */
    public static final Signal TENANT = guarded("tenant");

    /** Who is served first (with pool, route and format): a client must not choose it. */
    public static final Signal CLASS = guarded("class");

    public static final Signal POOL = guarded("pool");
    public static final Signal ROUTE = guarded("route");
    public static final Signal FORMAT = guarded("format");

    /** Can only shorten the class deadline: harmless from a client. */
    public static final Signal DEADLINE_MS = of("deadlineMs");

    /** How long a request may be held: a client must not choose it. */
    public static final Signal MAX_MESSAGE_TIMEOUT_MS = guarded("maxMessageTimeoutMs");

    /** Labels the decision record (and tells a retry by its id): harmless from a client. */
    public static final Signal OPERATION_ID = of("operationId");

    /**
     * Declared downstream calls of the request (retrieval depth, tool calls per turn): a client
     * could reserve the pool away from others.
     */
    public static final Signal FANOUT = guarded("fanout");

    /**
     * The agent run / workflow the request belongs to ({@code pools.<name>.workflow}): a client
     * could escape its budget or use up another's.
     */
    public static final Signal WORKFLOW = guarded("workflow");

    /** Never degrade this request ({@code true}, {@code 1} or {@code yes}): the degrade ladder. */
    public static final Signal NO_DEGRADE = of("noDegrade");

    /** The built-in signals, in the order the policy and {@code /config} list them. */
    public static final List<Signal> BUILT_IN =
        List.of(
            TENANT,
            CLASS,
            POOL,
            ROUTE,
            FORMAT,
            DEADLINE_MS,
            MAX_MESSAGE_TIMEOUT_MS,
            OPERATION_ID,
            FANOUT,
            WORKFLOW,
            NO_DEGRADE);

    private final String key;
    private final boolean guarded;

    private Signal(String key, boolean guarded) {
      if (key.isEmpty()) {
        throw new IllegalArgumentException("a signal needs a key");
      }
      this.key = key;
      this.guarded = guarded;
    }

    /**
     * A signal a client can only hurt itself with (an SDK's retry counter): a client header as its
     * source is no warning.
     */
    public static Signal of(String key) {
      return new Signal(key, false);
    }

    /**
     * A signal a client must not choose: a trusted header the shipped Envoy configs do not strip is
     * warned about ({@link TrustedHeaders#warnings}).
     */
    public static Signal guarded(String key) {
      return new Signal(key, true);
    }

    /** The key under {@code signals:}. */
    public String key() {
      return key;
    }

    /** Whether a client must not choose it ({@link #guarded}). */
    public boolean isGuarded() {
      return guarded;
    }

    @Override
    public boolean equals(@Nullable Object o) {
      return o instanceof Signal s && s.key.equals(key);
    }

    @Override
    public int hashCode() {
      return key.hashCode();
    }

    @Override
    public String toString() {
      return key;
    }
  }

  /** A trusted place to read a signal from. */
  public sealed interface Source {
    /** gRPC initial metadata Envoy sends (per-route {@code grpc_initial_metadata}). */
    record Metadata(String metadata) implements Source {}

    /** A request header the operator declares trusted (set or sanitized by an earlier filter). */
    record Header(String header) implements Source {}

    /** Envoy dynamic metadata forwarded in {@code metadata_context} (e.g. from jwt_authn). */
    record DynamicMetadata(String namespace, List<String> path) implements Source {}

    /** A {@code request_attributes} expression, e.g. route metadata. */
    record Attribute(String attribute) implements Source {}
  }

  /** How a route's request is estimated. */
  public enum EstimateFrom {
    /** Parse the buffered request body (Envoy request_body_mode BUFFERED). */
    BODY,
    /** Decide at request headers from content-length. */
    HEADERS
  }

  /**
   * Maps a request to (pool, class, format). Matches when every given criterion matches: the
   * trusted {@code route} signal equals {@code matchRoute}, the path equals {@code matchPath} or
   * starts with {@code matchPathPrefix}. {@code mode}: the route's own mode, or null to follow its
   * pool's (the pool the request resolves to).
   */
  public record RouteRule(
      String name,
      @Nullable String matchRoute,
      @Nullable String matchPath,
      @Nullable String matchPathPrefix,
      String pool,
      String requestClass,
      RequestFormat format,
      EstimateFrom estimateFrom,
      @Nullable Mode mode,
      boolean degrade) {}

  /** What happens to a request no route matches. */
  public record Unmatched(
      boolean reject,
      String pool,
      String requestClass,
      RequestFormat format,
      EstimateFrom estimateFrom) {}

  /**
   * Headers added to admitted requests.
   *
   * @param deadlineHeader the request header carrying the time left before the request's deadline
   *     to the upstream, in milliseconds ({@code ""}: none)
   * @param upstreamTimeout also set Envoy's {@code x-envoy-upstream-rq-timeout-ms} to it, so Envoy
   *     cancels the upstream request when the deadline passes (needs {@code
   *     mutation_rules.allow_envoy})
   */
  public record Responses(
      boolean decisionHeader,
      boolean estimateHeader,
      String deadlineHeader,
      boolean upstreamTimeout) {
    /** The default deadline header. */
    public static final String DEADLINE_HEADER = "x-sluice-deadline-ms";

    /** The decision header on, the estimate header off, the default deadline header. */
    public static final Responses DEFAULTS = new Responses(true, false, DEADLINE_HEADER, false);
  }

  /**
   * The structured decision log (the admission record as JSON): at most {@code
   * maxAdmittedPerSecond} admitted and {@code maxRefusedPerSecond} refused records a second per
   * process (0 = no bound); the rest are counted, not written. With {@code otlp} (and {@code
   * telemetry.enabled}) every record written is also an OTLP log record to {@code
   * telemetry.exporter} ({@code RecordLogs}).
   */
  public record DecisionLog(
      boolean enabled,
      Level level,
      double sampleRate,
      boolean alwaysLogRejects,
      int maxAdmittedPerSecond,
      int maxRefusedPerSecond,
      DecisionLogFile file,
      boolean otlp) {
    public static final DecisionLog DEFAULTS =
        new DecisionLog(true, Level.INFO, 1.0, true, 10, 50, DecisionLogFile.NONE, false);

    /** The logger level the records are written at. */
    public enum Level {
      TRACE,
      DEBUG,
      INFO,
      WARN;

      /** {@code trace}, {@code debug}, {@code info} or {@code warn}, as written in the policy. */
      public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
      }
    }
  }
}

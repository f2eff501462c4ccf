package io.sluice.config;

import java.time.Duration;
import java.util.Set;

/**
 * The {@code server} section (ports, TLS, health, warm-up, stream and HTTP/2 limits) and the {@code
 * limits} section (request envelope). Every error names its YAML path and the value expected.
 */
final class ServerSection {
  private ServerSection() {}

  /** The {@code limits} section. */
  static SluiceConfig.Limits limits(Node n) {
    Node lim = n.only(Set.of("maxBodyBytes"));
    return new SluiceConfig.Limits(
        lim.get("maxBodyBytes").bytes(SluiceConfig.Limits.DEFAULTS.maxBodyBytes()));
  }

  static SluiceConfig.Server read(Node s) {
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
                    "maxConnectionIdle",
                    "maxPrematureResets",
                    "prematureResetRatio"));
    Node a = s.get("admin").only(Set.of("host", "port", "control"));
    SluiceConfig.Server d = SluiceConfig.Server.DEFAULTS;
    SluiceConfig.Tls tls = null;
    Node t = g.get("tls").only(Set.of("certFile", "keyFile", "clientCaFile", "refreshInterval"));
    if (t.present()) {
      tls =
          new SluiceConfig.Tls(
              t.get("certFile").requiredString(),
              t.get("keyFile").requiredString(),
              t.get("clientCaFile").optionalString(null),
              t.get("refreshInterval").duration(SluiceConfig.Tls.DEFAULT_REFRESH_INTERVAL));
    }
    return new SluiceConfig.Server(
        g.get("host").string(d.grpcHost()),
        g.get("port").intValue(d.grpcPort(), 0, 65535),
        a.get("host").string(d.adminHost()),
        a.get("port").intValue(d.adminPort(), 0, 65535),
        g.get("maxInboundMessageSize").bytes(d.maxInboundMessageBytes()),
        s.get("shutdownGrace").duration(d.shutdownGrace()),
        tls,
        s.get("reloadInterval").duration(d.reloadInterval()),
        health(s.get("health")),
        warmup(s.get("warmup")),
        streams(g),
        http2(g),
        adminControl(a.get("control")));
  }

  /** server.admin.control: where the state-changing admin routes are served. */
  private static SluiceConfig.AdminControl adminControl(Node c) {
    c.only(Set.of("enabled", "host", "port"));
    SluiceConfig.AdminControl d = SluiceConfig.AdminControl.DEFAULTS;
    return new SluiceConfig.AdminControl(
        c.get("enabled").bool(d.enabled()),
        c.get("host").string(d.host()),
        c.get("port").intValue(d.port(), SluiceConfig.AdminControl.SHARED_PORT, 65535));
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
        boundedDuration(g.get("maxConnectionIdle"), d.maxConnectionIdle()),
        g.get("maxPrematureResets").intValue(d.maxPrematureResets(), 0, 100_000_000),
        g.get("prematureResetRatio").doubleValue(d.prematureResetRatio(), 0.0, 1.0));
  }

  private static SluiceConfig.Health health(Node h) {
    h.only(Set.of("maxHeapAfterGc", "heapAfterGcFor"));
    SluiceConfig.Health d = SluiceConfig.Health.DEFAULTS;
    return new SluiceConfig.Health(
        h.get("maxHeapAfterGc").doubleValue(d.maxHeapAfterGc(), 0.0, 1.0),
        h.get("heapAfterGcFor").duration(d.heapAfterGcFor()));
  }

  private static SluiceConfig.Warmup warmup(Node w) {
    w.only(Set.of("enabled", "streams", "rlsCalls", "timeout", "storeTimeout"));
    SluiceConfig.Warmup d = SluiceConfig.Warmup.DEFAULTS;
    return new SluiceConfig.Warmup(
        w.get("enabled").bool(d.enabled()),
        w.get("streams").intValue(d.streams(), 0, 10_000),
        w.get("rlsCalls").intValue(d.rlsCalls(), 0, 10_000),
        w.get("timeout").duration(d.timeout()),
        w.get("storeTimeout").duration(d.storeTimeout()));
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
}

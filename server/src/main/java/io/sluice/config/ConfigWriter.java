package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.share.ReplicaPolicy;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The inverse of {@link ConfigLoader}: a {@link SluiceConfig} as the tree the loader reads, with
 * every default filled in. Key names, duration syntax ({@code 250ms}, {@code 2s}, {@code 5m}),
 * sizes (bytes) and enum spellings ({@code admit}, {@code openai-chat}, {@code body}) are the
 * loader's, so the output of {@code /config} and {@code sluice config print-default --effective}
 * validates as it is: {@code ConfigLoader.parse(write(c))} equals {@code c} (its YAML text aside).
 *
 * <p>Nothing is redacted here; callers that show the tree redact it (bootstrap's {@code
 * ConfigView}).
 */
public final class ConfigWriter {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private ConfigWriter() {}

  /** The config as the loader's tree. */
  public static ObjectNode tree(SluiceConfig c) {
    ObjectNode root = MAPPER.createObjectNode();
    root.set("server", server(c.server()));
    root.putObject("limits").put("maxBodyBytes", c.limits().maxBodyBytes());
    root.set("estimation", estimation(c.estimation()));
    ObjectNode pools = root.putObject("pools");
    c.pools()
        .forEach((name, p) -> pools.set(name, pool(p).put("mode", c.poolMode(name).configName())));
    ObjectNode classes = root.putObject("classes");
    c.classes().forEach((name, k) -> classes.set(name, requestClass(k)));
    ObjectNode tiers = root.putObject("tiers");
    c.tiers().forEach((name, t) -> tiers.set(name, tier(t)));
    root.set("tenants", tenants(c.tenants()));
    root.set("signals", signals(c.signals()));
    ArrayNode routes = root.putArray("routes");
    for (SluiceConfig.RouteRule r : c.routes()) {
      routes.add(route(r));
    }
    SluiceConfig.Unmatched u = c.unmatched();
    ObjectNode un = root.putObject("unmatched");
    un.put("action", u.reject() ? "reject" : "admit")
        .put("pool", u.pool())
        .put("class", u.requestClass())
        .put("format", u.format().configName())
        .put("estimate", lower(u.estimateFrom()));
    root.putObject("responses")
        .put("decisionHeader", c.responses().decisionHeader())
        .put("estimateHeader", c.responses().estimateHeader())
        .put("deadlineHeader", c.responses().deadlineHeader())
        .put("upstreamTimeout", c.responses().upstreamTimeout());
    SluiceConfig.DecisionLog dl = c.decisionLog();
    ObjectNode dln =
        root.putObject("decisionLog")
            .put("enabled", dl.enabled())
            .put("level", dl.level().configName())
            .put("sampleRate", dl.sampleRate())
            .put("alwaysLogRejects", dl.alwaysLogRejects())
            .put("maxAdmittedPerSecond", dl.maxAdmittedPerSecond())
            .put("maxRefusedPerSecond", dl.maxRefusedPerSecond());
    if (dl.otlp()) {
      dln.put("otlp", true);
    }
    if (dl.file().enabled()) {
      dln.putObject("file")
          .put("path", dl.file().path())
          .put("maxBytes", dl.file().maxBytes())
          .put("maxAge", duration(dl.file().maxAge()))
          .put("maxFiles", dl.file().maxFiles());
    }
    ObjectNode rl = root.putObject("rateLimit");
    rl.put("enabled", c.rateLimit().enabled());
    ObjectNode env = rl.putObject("env");
    new java.util.TreeMap<>(c.rateLimit().env()).forEach(env::put);
    root.putObject("quotas")
        .put("failureMode", c.quotas().failureMode().configName())
        .put("keyPrefix", c.quotas().keyPrefix());
    ReplicaPolicy rp = c.replicas();
    ObjectNode rn = root.putObject("replicas");
    rn.put("leaseTtl", duration(rp.leaseTtl())).put("renewInterval", duration(rp.renewInterval()));
    poolMode(rn, rp.defaults());
    ObjectNode rpools = rn.putObject("pools");
    rp.pools().forEach((name, m) -> poolMode(rpools.putObject(name), m));
    c.sections().writeTo(root);
    return root;
  }

  private static ObjectNode server(SluiceConfig.Server s) {
    ObjectNode n = MAPPER.createObjectNode();
    ObjectNode g = n.putObject("grpc");
    g.put("host", s.grpcHost())
        .put("port", s.grpcPort())
        .put("maxInboundMessageSize", s.maxInboundMessageBytes());
    if (s.tls() != null) {
      SluiceConfig.Tls t = s.tls();
      ObjectNode tls = g.putObject("tls");
      tls.put("certFile", t.certFile()).put("keyFile", t.keyFile());
      if (t.clientCaFile() != null) {
        tls.put("clientCaFile", t.clientCaFile());
      }
      tls.put("refreshInterval", duration(t.refreshInterval()));
    }
    SluiceConfig.Streams st = s.streams();
    g.put("maxStreams", st.maxStreams())
        .put("maxStreamsPerConnection", st.maxStreamsPerConnection())
        .put("firstMessageTimeout", duration(st.firstMessageTimeout()))
        .put("idleTimeout", duration(st.idleTimeout()))
        .put("admittedIdleTimeout", duration(st.admittedIdleTimeout()));
    SluiceConfig.Http2 h2 = s.http2();
    g.put("maxResetsPerWindow", h2.maxResetsPerWindow())
        .put("resetWindow", duration(h2.resetWindow()))
        .put("maxHeaderListSize", h2.maxHeaderListBytes())
        .put("permitKeepAliveTime", duration(h2.permitKeepAliveTime()))
        .put("maxConnectionIdle", duration(h2.maxConnectionIdle()))
        .put("maxPrematureResets", h2.maxPrematureResets())
        .put("prematureResetRatio", h2.prematureResetRatio());
    var admin = n.putObject("admin").put("host", s.adminHost()).put("port", s.adminPort());
    SluiceConfig.AdminControl ac = s.adminControl();
    var control = admin.putObject("control").put("enabled", ac.enabled()).put("host", ac.host());
    if (ac.port() != SluiceConfig.AdminControl.SHARED_PORT) {
      control.put("port", ac.port());
    }
    n.put("shutdownGrace", duration(s.shutdownGrace()));
    n.put("reloadInterval", duration(s.reloadInterval()));
    n.putObject("health")
        .put("maxHeapAfterGc", s.health().maxHeapAfterGc())
        .put("heapAfterGcFor", duration(s.health().heapAfterGcFor()));
    SluiceConfig.Warmup w = s.warmup();
    n.putObject("warmup")
        .put("enabled", w.enabled())
        .put("streams", w.streams())
        .put("rlsCalls", w.rlsCalls())
        .put("timeout", duration(w.timeout()))
        .put("storeTimeout", duration(w.storeTimeout()));
    return n;
  }

  private static ObjectNode estimation(SluiceConfig.Estimation e) {
    ObjectNode n =
        MAPPER
            .createObjectNode()
            .put("bytesPerToken", e.bytesPerToken())
            .put("imageTokens", e.imageTokens())
            .put("attachmentTokens", e.attachmentTokens())
            .put("toolDefinitionOverheadTokens", e.toolDefinitionOverheadTokens())
            .put("perMessageOverheadTokens", e.perMessageOverheadTokens())
            .put("replyPrimingTokens", e.replyPrimingTokens())
            .put("maxJsonDepth", e.maxJsonDepth())
            .put("maxTokenizeChars", e.maxTokenizeChars())
            .put("tokenCacheChars", e.tokenCacheChars())
            .put("tokenCacheMinChars", e.tokenCacheMinChars())
            .put("defaultInputTokens", e.defaultInputTokens());
    io.sluice.core.estimate.OutputReserves.Settings lr = e.learnedReserve();
    n.putObject("learnedReserve")
        .put("enabled", lr.enabled())
        .put("warmup", lr.warmup())
        .put("halfLife", lr.halfLife())
        .put("maxKeys", lr.maxKeys())
        .put("tenantKeys", lr.tenantKeys())
        .put("confidence", lr.confidence())
        .put("poolPrior", lr.poolPrior())
        .put("shareInterval", duration(Duration.ofMillis(lr.shareIntervalMillis())))
        .put("shareWindow", duration(Duration.ofMillis(lr.shareWindowMillis())));
    return n;
  }

  private static ObjectNode pool(PoolPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("capacity", p.capacityWorkUnits())
        .put("maxRequests", p.maxRequests())
        .put("inputWeight", p.inputWeight())
        .put("outputWeight", p.outputWeight());
    n.putObject("retryAfter")
        .put("min", duration(p.retryAfterMin()))
        .put("max", duration(p.retryAfterMax()))
        .put("jitter", p.retryAfterJitter());
    n.put("maxMessageTimeout", duration(p.maxMessageTimeout()))
        .put("holdMargin", duration(p.holdMargin()))
        .put("defaultServiceTime", duration(p.defaultServiceTime()));
    if (p.queueDepth() > 0) {
      n.put("queueDepth", p.queueDepth());
    }
    n.putObject("fanout")
        .put("perTool", p.fanout().perTool())
        .put("toolChoiceRequired", p.fanout().toolChoiceRequired())
        .put("parallelToolCalls", p.fanout().parallelToolCalls())
        .put("perDeclaredCall", p.fanout().perDeclaredCall());
    n.putObject("workflow")
        .put("maxRequests", p.workflow().maxRequests())
        .put("maxWork", p.workflow().maxWork());
    io.sluice.core.policy.EnginePriority ep = p.enginePriority();
    if (ep.enabled()) {
      ObjectNode e = n.putObject("enginePriority").put("preset", ep.preset().configName());
      e.put("field", ep.field() == null ? "" : ep.field());
      if (ep.header() != null) {
        e.put("header", ep.header());
      }
      ObjectNode values = e.putObject("values");
      new java.util.TreeMap<>(ep.values())
          .forEach(
              (k, v) ->
                  values.set(k, MAPPER.getNodeFactory().numberNode(new java.math.BigDecimal(v))));
    }
    io.sluice.core.policy.AdaptivePolicy a = p.adaptive();
    if (a.enabled()) {
      ObjectNode an =
          n.putObject("adaptive").put("enabled", true).put("minCapacity", a.minCapacity());
      if (p.maxRequests() > 0) {
        an.put("minRequests", a.minRequests());
      }
      an.put("interval", duration(a.interval())).put("minSamples", a.minSamples());
      an.putObject("latency")
          .put("growBelow", a.growBelow())
          .put("shrinkAbove", a.shrinkAbove())
          .put("baselineWindow", duration(a.baselineWindow()));
      an.put("backoff", a.backoff()).put("maxPause", duration(a.maxPause()));
      var statuses = an.putArray("overloadStatuses");
      new java.util.TreeSet<>(a.overloadStatuses()).forEach(statuses::add);
      if (a.start() == io.sluice.core.policy.AdaptivePolicy.START_CEILING) {
        an.put("start", "ceiling");
      } else if (a.start() == io.sluice.core.policy.AdaptivePolicy.START_FLOOR) {
        an.put("start", "floor");
      } else {
        an.put("start", a.start());
      }
    }
    return n;
  }

  private static ObjectNode requestClass(ClassPolicy c) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("rank", c.rank())
        .put("reservedShare", c.reservedShare())
        .put("lendableShare", c.lendableShare())
        .put("borrow", c.borrow())
        .put("deadline", duration(c.deadline()))
        .put("maxQueueWait", duration(c.maxQueueWait()))
        .put("defaultOutputTokens", c.defaultOutputTokens())
        .put("maxOutputTokens", c.maxOutputTokens())
        .put("shedStatus", c.shedStatus())
        .put("reserveQuantile", c.reserveQuantile());
    io.sluice.core.policy.DegradePolicy d = c.degrade();
    if (!d.ladder().isEmpty()) {
      ObjectNode dn =
          n.putObject("degrade")
              .put("waitAbove", duration(d.waitAbove()))
              .put("headroomBelow", d.headroomBelow());
      ArrayNode ladder = dn.putArray("ladder");
      for (io.sluice.core.policy.DegradePolicy.Rung rung : d.ladder()) {
        ObjectNode r = ladder.addObject();
        if (rung instanceof io.sluice.core.policy.DegradePolicy.Concise cc) {
          ObjectNode cn = r.putObject("concise").put("maxOutputTokens", cc.maxOutputTokens());
          if (cc.instruction() != null) {
            cn.put("instruction", cc.instruction());
          }
          if (cc.capField() != null) {
            cn.put("capField", cc.capField());
          }
        } else if (rung instanceof io.sluice.core.policy.DegradePolicy.Reroute rr) {
          ObjectNode rn = r.putObject("reroute").put("pool", rr.pool());
          if (rr.header() != null) {
            rn.put("header", rr.header()).put("value", rr.value());
          }
          if (rr.model() != null) {
            rn.put("model", rr.model());
          }
        }
      }
    }
    n.putObject("queue")
        .put("workShare", c.queueWorkShare())
        .put("maxItems", c.maxQueueItems())
        .put("tenantShare", c.tenantQueueShare());
    return n;
  }

  private static ObjectNode tier(TierPolicy t) {
    return MAPPER
        .createObjectNode()
        .put("weight", t.weight())
        .put("maxInFlight", t.maxInFlight())
        .put("rpm", t.requestsPerMinute())
        .put("inputTpm", t.inputTokensPerMinute())
        .put("outputTpm", t.outputTokensPerMinute());
  }

  private static ObjectNode tenants(SluiceConfig.Tenants t) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("anonymousTier", t.anonymousTier())
        .put("unknown", lower(t.unknown()))
        .put("unknownTier", t.unknownTier());
    ObjectNode known = n.putObject("known");
    new java.util.TreeMap<>(t.known()).forEach((id, tier) -> known.putObject(id).put("tier", tier));
    n.put("allowUnknownAboveAnonymous", t.allowUnknownAboveAnonymous());
    return n;
  }

  /** Every signal the snapshot knows, built-in then registered, as the loader ordered them. */
  private static ObjectNode signals(Map<SluiceConfig.Signal, List<Source>> signals) {
    ObjectNode n = MAPPER.createObjectNode();
    for (var e : signals.entrySet()) {
      List<Source> sources = e.getValue();
      ArrayNode list = n.putArray(e.getKey().key());
      for (Source s : sources) {
        ObjectNode item = list.addObject();
        if (s instanceof Source.Metadata m) {
          item.put("metadata", m.metadata());
        } else if (s instanceof Source.Header h) {
          item.put("header", h.header());
        } else if (s instanceof Source.Attribute a) {
          item.put("attribute", a.attribute());
        } else if (s instanceof Source.DynamicMetadata d) {
          ObjectNode dm = item.putObject("dynamicMetadata");
          dm.put("namespace", d.namespace());
          ArrayNode path = dm.putArray("path");
          d.path().forEach(path::add);
        }
      }
    }
    return n;
  }

  private static ObjectNode route(SluiceConfig.RouteRule r) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("name", r.name());
    ObjectNode m = n.putObject("match");
    if (r.matchRoute() != null) {
      m.put("route", r.matchRoute());
    }
    if (r.matchPath() != null) {
      m.put("path", r.matchPath());
    }
    if (r.matchPathPrefix() != null) {
      m.put("pathPrefix", r.matchPathPrefix());
    }
    n.put("pool", r.pool())
        .put("class", r.requestClass())
        .put("format", r.format().configName())
        .put("estimate", lower(r.estimateFrom()));
    if (r.mode() != null) { // absent: the route follows its pool's mode
      n.put("mode", r.mode().configName());
    }
    if (!r.degrade()) {
      n.put("degrade", false);
    }
    return n;
  }

  private static void poolMode(ObjectNode n, ReplicaPolicy.PoolMode m) {
    n.put("storeDown", lower(m.storeDown()))
        .put("keepShareFor", duration(m.keepShareFor()))
        .put("expectedReplicas", m.expectedReplicas())
        .put("floor", m.floor());
  }

  private static String lower(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }

  /**
   * A duration in the loader's syntax, in the largest unit that keeps it exact: {@code 0s}, {@code
   * 30s}, {@code 2m}, {@code 1h}, {@code 250ms}, {@code 0.5ms}.
   */
  public static String duration(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    long nanos = d.toNanos();
    if (nanos % 3_600_000_000_000L == 0) {
      return nanos / 3_600_000_000_000L + "h";
    }
    if (nanos % 60_000_000_000L == 0) {
      return nanos / 60_000_000_000L + "m";
    }
    if (nanos % 1_000_000_000L == 0) {
      return nanos / 1_000_000_000L + "s";
    }
    return BigDecimal.valueOf(nanos).movePointLeft(6).stripTrailingZeros().toPlainString() + "ms";
  }
}

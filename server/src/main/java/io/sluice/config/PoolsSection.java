package io.sluice.config;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.EnginePriority;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.WorkflowPolicy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code pools} section: each pool's numbers, adaptive limit, fan-out pricing, workflow budget,
 * engine priority and mode. Every error names its YAML path and the value expected.
 */
final class PoolsSection {
  private PoolsSection() {}

  /** The pools read, and each one's mode, in file order. */
  record Pools(Map<String, PoolPolicy> policies, Map<String, SluiceConfig.Mode> modes) {}

  /** The section; a pool with an error is left out (the error is collected). */
  static Pools read(Node n) {
    Map<String, PoolPolicy> pools = new LinkedHashMap<>();
    Map<String, SluiceConfig.Mode> poolModes = new LinkedHashMap<>();
    for (var e : n.entries().entrySet()) {
      PoolPolicy p = pool(e.getKey(), e.getValue());
      if (p != null) {
        pools.put(e.getKey(), p);
        poolModes.put(e.getKey(), mode(e.getValue().get("mode"), SluiceConfig.Mode.ENFORCE));
      }
    }
    if (n.present() && n.entries().isEmpty()) {
      n.invalid("{}", "at least one pool");
    }
    if (!n.present()) {
      n.error("pools: missing (expected: at least one pool)");
    }
    return new Pools(pools, poolModes);
  }

  /** {@code enforce} or {@code shadow} ({@code def} when absent). */
  static SluiceConfig.Mode mode(Node n, SluiceConfig.Mode def) {
    return n.enumValue(SluiceConfig.Mode.class, def, SluiceConfig.Mode::configName);
  }

  /** A route's mode: null when it has none (its pool's then). */
  static SluiceConfig.@Nullable Mode optionalMode(Node n) {
    return n.optionalEnumValue(SluiceConfig.Mode.class, null, SluiceConfig.Mode::configName);
  }

  private static @Nullable PoolPolicy pool(String name, Node p) {
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
            "enginePriority",
            "queueDepth"));
    Node ra = p.get("retryAfter").only(Set.of("min", "max", "jitter"));
    // the capacity has no default: a pool without one is an error below
    PoolPolicy d = PoolPolicy.defaults(name, 1);
    EnginePriority enginePriority = enginePriority(p.get("enginePriority"));
    FanOutPolicy fanout = fanout(p.get("fanout"));
    WorkflowPolicy workflow = workflow(p.get("workflow"));
    if (!p.get("capacity").present()) {
      p.get("capacity").error(p.path() + ".capacity: missing (expected: work units > 0)");
      return null;
    }
    Duration mmt = p.get("maxMessageTimeout").duration(d.maxMessageTimeout());
    if (mmt.compareTo(Duration.ofHours(1)) > 0) {
      p.get("maxMessageTimeout").invalid(mmt.toString(), "0s .. 3600s (Envoy's limit)");
    }
    long capacity = p.get("capacity").longValue(1, 1, Long.MAX_VALUE / 4);
    int maxRequests = p.get("maxRequests").intValue(d.maxRequests(), 0, 10_000_000);
    AdaptivePolicy adaptive = adaptive(p.get("adaptive"), capacity, maxRequests);
    return p.build(
        () ->
            PoolPolicy.builder(name, capacity)
                .maxRequests(maxRequests)
                .inputWeight(p.get("inputWeight").doubleValue(d.inputWeight(), 0, 1000))
                .outputWeight(p.get("outputWeight").doubleValue(d.outputWeight(), 0, 1000))
                .retryAfter(
                    ra.get("min").duration(d.retryAfterMin()),
                    ra.get("max").duration(d.retryAfterMax()))
                .maxMessageTimeout(mmt)
                .retryAfterJitter(ra.get("jitter").doubleValue(d.retryAfterJitter(), 0.0, 0.99))
                .holdMargin(p.get("holdMargin").duration(d.holdMargin()))
                .defaultServiceTime(p.get("defaultServiceTime").duration(d.defaultServiceTime()))
                .adaptive(adaptive)
                .fanout(fanout)
                .workflow(workflow)
                .enginePriority(enginePriority)
                // absent: 0, a tool pool's becomes its maxRequests (ToolQueues.withDepths)
                .queueDepth(p.get("queueDepth").intValue(0, 1, 10_000_000))
                .build());
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
    } else if (!os.value().isArray() || os.value().isEmpty()) {
      os.invalid(os.value().toString(), "a list of HTTP statuses, e.g. [429, 503, 529]");
    } else {
      for (com.fasterxml.jackson.databind.JsonNode v : os.value()) {
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
      return AdaptivePolicy.builder(minCapacity, minRequests)
          .interval(a.get("interval").duration(off.interval()))
          .minSamples(a.get("minSamples").intValue(off.minSamples(), 1, 100_000))
          .latency(
              lat.get("growBelow").doubleValue(off.growBelow(), 1.0, 100),
              lat.get("shrinkAbove").doubleValue(off.shrinkAbove(), 1.0, 100))
          .backoff(a.get("backoff").doubleValue(off.backoff(), 0.01, 0.99))
          .maxPause(a.get("maxPause").duration(off.maxPause()))
          .baselineWindow(lat.get("baselineWindow").duration(off.baselineWindow()))
          .overloadStatuses(statuses.isEmpty() ? off.overloadStatuses() : statuses)
          .start(adaptiveStart(a.get("start")))
          .build();
    } catch (IllegalArgumentException e) {
      // the record names the field under "adaptive."; the error names its whole path
      // AdaptivePolicy's validation always says what is wrong
      a.error(
          a.path()
              + java.util.Objects.requireNonNull(e.getMessage()).substring("adaptive".length()));
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
    if (n.value().isNumber()) {
      return n.doubleValue(AdaptivePolicy.START_CEILING, 0.0, 1.0);
    }
    String v = n.string("ceiling").trim().toLowerCase(java.util.Locale.ROOT);
    return switch (v) {
      case "ceiling" -> AdaptivePolicy.START_CEILING;
      case "floor" -> AdaptivePolicy.START_FLOOR;
      default -> {
        n.invalid(n.value().toString(), "ceiling, floor or a fraction of the ceiling in 0..1");
        yield AdaptivePolicy.START_CEILING;
      }
    };
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
    String field =
        n.get("field").optionalString(preset == EnginePriority.Preset.NONE ? null : "priority");
    if (field != null && field.isBlank()) {
      field = null;
    }
    String header = n.get("header").optionalString(null);
    if (header != null) {
      header = header.trim().toLowerCase(Locale.ROOT);
      if (!Node.HEADER_NAME.matcher(header).matches()) {
        n.get("header").invalid(header, "an HTTP header name");
        header = null;
      }
    }
    Map<String, String> values = new LinkedHashMap<>();
    for (var e : n.get("values").entries().entrySet()) {
      com.fasterxml.jackson.databind.JsonNode v = e.getValue().value();
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
}

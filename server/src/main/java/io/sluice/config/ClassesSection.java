package io.sluice.config;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.DegradePolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code classes} section: each priority class's shares, deadlines, queue bounds and degrade
 * ladder. Every error names its YAML path and the value expected.
 */
final class ClassesSection {
  private ClassesSection() {}

  /** The section; a class with an error is left out (the error is collected). */
  static Map<String, ClassPolicy> read(Node n) {
    Map<String, ClassPolicy> classes = new LinkedHashMap<>();
    for (var e : n.entries().entrySet()) {
      ClassPolicy c = requestClass(e.getKey(), e.getValue());
      if (c != null) {
        classes.put(e.getKey(), c);
      }
    }
    return classes;
  }

  /**
   * The rungs' names of each class's degrade ladder, by class: those a request of the class may be
   * run as (a ladder with a trigger on, {@link DegradePolicy#enabled}); none for the others.
   */
  static Map<String, List<String>> rungs(Map<String, ClassPolicy> classes) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    classes.forEach(
        (name, c) ->
            out.put(
                name,
                c.degrade().enabled()
                    ? c.degrade().ladder().stream().map(DegradePolicy.Rung::name).toList()
                    : List.of()));
    return out;
  }

  /**
   * The checks across the section: at least one class, reroute rungs naming declared pools, and
   * reserved shares summing to at most the whole pool.
   */
  static void check(
      Node n,
      Map<String, ClassPolicy> classes,
      Set<String> declaredPools,
      Set<String> declaredClasses) {
    if (declaredClasses.isEmpty()) {
      n.error("classes: missing (expected: at least one class)");
    }
    for (var e : classes.entrySet()) {
      for (DegradePolicy.Rung rung : e.getValue().degrade().ladder()) {
        if (rung instanceof DegradePolicy.Reroute rr && !declaredPools.contains(rr.pool())) {
          n.error(
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
      n.error(
          "classes.*.reservedShare: sum is "
              + reservedSum
              + " (expected: <= 1.0, shares are fractions of each pool)");
    }
  }

  private static @Nullable ClassPolicy requestClass(String name, Node c) {
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
    ClassPolicy d = ClassPolicy.defaults(name);
    double reserved = c.get("reservedShare").doubleValue(d.reservedShare(), 0, 1);
    return c.build(
        () ->
            ClassPolicy.builder(name)
                .rank(c.get("rank").intValue(d.rank(), 0, 1000))
                .shares(reserved, c.get("lendableShare").doubleValue(d.lendableShare(), 0, 1))
                .borrow(c.get("borrow").bool(d.borrow()))
                .deadline(c.get("deadline").duration(d.deadline()))
                .maxQueueWait(c.get("maxQueueWait").duration(d.maxQueueWait()))
                .outputTokens(
                    c.get("defaultOutputTokens").longValue(d.defaultOutputTokens(), 0, 10_000_000),
                    c.get("maxOutputTokens").longValue(d.maxOutputTokens(), 0, 10_000_000))
                .shedStatus(c.get("shedStatus").intValue(d.shedStatus(), 100, 599))
                .queue(
                    q.get("workShare").doubleValue(d.queueWorkShare(), 0.0, 100.0),
                    q.get("maxItems").intValue(d.maxQueueItems(), 1, 10_000_000),
                    q.get("tenantShare").doubleValue(d.tenantQueueShare(), 0.0, 1.0))
                .reserveQuantile(
                    c.get("reserveQuantile").doubleValue(d.reserveQuantile(), 0.5, 0.999))
                .degrade(degrade)
                .build());
  }

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
      if (item.value().isObject()
          && item.value().size() == 1
          && !item.get("concise").present()
          && !item.get("reroute").present()) {
        continue; // an unknown rung: named by only() above
      }
      if (!item.value().isObject() || item.value().size() != 1) {
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
        String capField = c.get("capField").optionalString(null);
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
                c.get("instruction").optionalString(null),
                capField);
      } else {
        Node rr = item.get("reroute").only(Set.of("pool", "header", "value", "model"));
        String pool = rr.get("pool").requiredString();
        String header = rr.get("header").optionalString(null);
        String value = rr.get("value").optionalString(null);
        String model = rr.get("model").optionalString(null);
        if (header != null) {
          header = header.trim().toLowerCase(Locale.ROOT);
          if (!Node.HEADER_NAME.matcher(header).matches() || header.startsWith(":")) {
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
}

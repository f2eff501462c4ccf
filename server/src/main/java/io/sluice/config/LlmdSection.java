package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The {@code llmD} section (docs/configuration.md, "llm-d and the Inference Extension"): an
 * InferenceObjective name, as a trusted {@code class} signal carries it, mapped to a Sluice class
 * either by name or by the objective's priority; and llm-d's dropped-reason header on refusals.
 * Every error names its YAML path and the value expected.
 *
 * <pre>
 * llmD:
 *   priorityClasses: {interactive: 50, standard: 0, batch: -1000}
 *   objectives:
 *     premium-traffic: {priority: 100}   # as in the InferenceObjective
 *     nightly: batch                     # or a class by name
 *   droppedReasonHeader: true
 * </pre>
 */
public final class LlmdSection implements ConfigSection<LlmdInterop> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Most objectives one policy may name (a bound on the map the resolver looks names up in). */
  public static final int MAX_OBJECTIVES = 1024;

  /** The section, to read its value: {@code config.section(LlmdSection.SECTION)}. */
  public static final LlmdSection SECTION = new LlmdSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public LlmdSection() {}

  @Override
  public String name() {
    return "llmD";
  }

  @Override
  public LlmdInterop defaults() {
    return LlmdInterop.DEFAULTS;
  }

  @Override
  public LlmdInterop read(Node n, Refs refs) {
    n.only(Set.of("objectives", "priorityClasses", "droppedReasonHeader"));
    Map<String, Integer> minimums = new LinkedHashMap<>();
    for (var e : n.get("priorityClasses").entries().entrySet()) {
      Node v = e.getValue();
      if (!refs.classes().contains(e.getKey())) {
        v.invalid(e.getKey(), "the name of a class in classes");
        continue;
      }
      if (!v.present() || !v.value().canConvertToInt() || !v.value().isIntegralNumber()) {
        v.invalid(String.valueOf(v.json()), "an integer InferenceObjective priority");
        continue;
      }
      minimums.put(e.getKey(), v.value().intValue());
    }
    Map<String, String> objectives = new LinkedHashMap<>();
    Map<String, Node> entries = n.get("objectives").entries();
    if (entries.size() > MAX_OBJECTIVES) {
      n.get("objectives").invalid(entries.size() + " entries", "at most " + MAX_OBJECTIVES);
    }
    for (var e : entries.entrySet()) {
      Node v = e.getValue();
      if (v.present() && v.value().isTextual()) {
        String cls = v.value().asText();
        if (!refs.classes().contains(cls)) {
          v.invalid(cls, "the name of a class in classes, or {priority: <integer>}");
          continue;
        }
        objectives.put(e.getKey(), cls);
        continue;
      }
      Node p = v.only(Set.of("priority")).get("priority");
      if (!p.present() || !p.value().isIntegralNumber() || !p.value().canConvertToInt()) {
        v.invalid(String.valueOf(v.json()), "a class name, or {priority: <integer>}");
        continue;
      }
      String cls = LlmdInterop.classForPriority(minimums, p.value().intValue());
      if (cls == null) {
        p.invalid(
            String.valueOf(p.value().intValue()),
            "a class name instead, or llmD.priorityClasses naming the lowest priority of each class");
        continue;
      }
      objectives.put(e.getKey(), cls);
    }
    return new LlmdInterop(
        objectives,
        minimums,
        n.get("droppedReasonHeader").bool(LlmdInterop.DEFAULTS.droppedReasonHeader()));
  }

  /** The section as {@link #read} reads it: each objective by the class it resolved to. */
  @Override
  public ObjectNode write(LlmdInterop value) {
    ObjectNode n = MAPPER.createObjectNode();
    ObjectNode min = n.putObject("priorityClasses");
    new java.util.TreeMap<>(value.priorityClasses()).forEach(min::put);
    ObjectNode obj = n.putObject("objectives");
    new java.util.TreeMap<>(value.objectiveClasses()).forEach(obj::put);
    n.put("droppedReasonHeader", value.droppedReasonHeader());
    return n;
  }
}

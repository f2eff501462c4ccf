package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.OperationCheck;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code intake} section (docs/configuration.md, "Background intake"): read and validated here,
 * written back for {@code /config}. Every error names its YAML path and the value expected.
 */
public final class IntakeSection implements ConfigSection<IntakePolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(IntakeSection.SECTION)}. */
  public static final IntakeSection SECTION = new IntakeSection();

  /**
   * The request's path ({@code signals.intakePath}, by default the {@code :path} header): which
   * operation route a request asks for. A client can only ask for its own jobs with it.
   */
  public static final SluiceConfig.Signal PATH = SluiceConfig.Signal.of(OperationCheck.PATH);

  /** The request's method ({@code signals.intakeMethod}, by default {@code :method}). */
  public static final SluiceConfig.Signal METHOD = SluiceConfig.Signal.of(OperationCheck.METHOD);

  private static final Set<String> SIGNALS = Set.of(PATH.key(), METHOD.key());

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public IntakeSection() {}

  @Override
  public String name() {
    return "intake";
  }

  @Override
  public IntakePolicy defaults() {
    return IntakePolicy.DEFAULTS;
  }

  @Override
  public List<SluiceConfig.Signal> declaredSignals() {
    return List.of(PATH, METHOD);
  }

  /** The operation routes are told by path and method while intake is on. */
  @Override
  public Set<String> signals(IntakePolicy p) {
    return p.enabled() ? SIGNALS : Set.of();
  }

  /** Envoy's own pseudo-headers. */
  @Override
  public Map<String, String> signalHeaders() {
    return Map.of(PATH.key(), ":path", METHOD.key(), ":method");
  }

  @Override
  public IntakePolicy read(Node n, Refs refs) {
    IntakePolicy d = IntakePolicy.DEFAULTS;
    n.only(
        Set.of(
            "enabled",
            "classes",
            "routes",
            "statusPath",
            "freshness",
            "maxJobsPerTenant",
            "maxWorkPerTenant",
            "maxRequestBytes",
            "retention",
            "maxJobs"));
    boolean enabled = n.get("enabled").bool(d.enabled());
    Set<String> classes = names(n.get("classes"), refs.classes(), "the name of a class in classes");
    Set<String> routes = names(n.get("routes"), refs.routes(), "the name of a route in routes");
    String statusPath = n.get("statusPath").string(d.statusPath());
    if (!statusPath.startsWith("/") || !statusPath.endsWith("/")) {
      n.get("statusPath").invalid(statusPath, "a path that starts and ends with /");
      statusPath = d.statusPath();
    }
    Duration freshness = between(n.get("freshness"), d.freshness(), Duration.ofSeconds(1), 7);
    Duration retention = between(n.get("retention"), d.retention(), Duration.ofSeconds(1), 30);
    int maxJobsPerTenant = n.get("maxJobsPerTenant").intValue(d.maxJobsPerTenant(), 1, 10_000_000);
    long maxWorkPerTenant =
        n.get("maxWorkPerTenant").longValue(d.maxWorkPerTenant(), 1, Long.MAX_VALUE / 4);
    int maxRequestBytes =
        (int) n.get("maxRequestBytes").longValue(d.maxRequestBytes(), 1, 64L << 20);
    int maxJobs = n.get("maxJobs").intValue(d.maxJobs(), 1, 10_000_000);
    if (enabled && classes.isEmpty() && routes.isEmpty()) {
      n.get("classes")
          .error(
              n.path()
                  + ".classes: empty while intake is enabled (expected: "
                  + "at least one class in intake.classes or route in intake.routes)");
    }
    return new IntakePolicy(
        enabled,
        classes,
        routes,
        statusPath,
        freshness,
        maxJobsPerTenant,
        maxWorkPerTenant,
        maxRequestBytes,
        retention,
        maxJobs);
  }

  private static Set<String> names(Node n, Set<String> known, String expected) {
    Set<String> out = new LinkedHashSet<>();
    for (Node item : n.items()) {
      String name = item.string("");
      if (!known.contains(name)) {
        item.invalid(name, expected);
        continue;
      }
      out.add(name);
    }
    return out;
  }

  /** A duration in [{@code min}, {@code maxDays} days]. */
  private static Duration between(Node n, Duration def, Duration min, int maxDays) {
    Duration v = n.duration(def);
    if (v.compareTo(min) < 0 || v.compareTo(Duration.ofDays(maxDays)) > 0) {
      n.invalid(
          ConfigWriter.duration(v),
          "a duration in " + ConfigWriter.duration(min) + ".." + (maxDays * 24) + "h");
      return def;
    }
    return v;
  }

  @Override
  public ObjectNode write(IntakePolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("enabled", p.enabled());
    ArrayNode classes = n.putArray("classes");
    p.classes().stream().sorted().forEach(classes::add);
    ArrayNode routes = n.putArray("routes");
    p.routes().stream().sorted().forEach(routes::add);
    n.put("statusPath", p.statusPath())
        .put("freshness", ConfigWriter.duration(p.freshness()))
        .put("maxJobsPerTenant", p.maxJobsPerTenant())
        .put("maxWorkPerTenant", p.maxWorkPerTenant())
        .put("maxRequestBytes", p.maxRequestBytes())
        .put("retention", ConfigWriter.duration(p.retention()))
        .put("maxJobs", p.maxJobs());
    return n;
  }
}

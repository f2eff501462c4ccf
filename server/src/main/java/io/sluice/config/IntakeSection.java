package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.intake.DispatchCheck;
import io.sluice.core.intake.DispatchMarker;
import io.sluice.core.intake.DispatchPolicy;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.OperationCheck;
import io.sluice.core.intake.WhenLate;
import java.time.Duration;
import java.util.LinkedHashMap;
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

  /** The dispatch marker ({@code signals.intakeDispatch}, by default {@code x-sluice-dispatch}). */
  public static final SluiceConfig.Signal DISPATCH = SluiceConfig.Signal.of(DispatchCheck.SIGNAL);

  private static final Set<String> SIGNALS = Set.of(PATH.key(), METHOD.key(), DISPATCH.key());

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
    return List.of(PATH, METHOD, DISPATCH);
  }

  /** The operation routes are told by path and method while intake is on. */
  @Override
  public Set<String> signals(IntakePolicy p) {
    return p.enabled() ? SIGNALS : Set.of();
  }

  /** Envoy's own pseudo-headers. */
  @Override
  public Map<String, String> signalHeaders() {
    return Map.of(
        PATH.key(), ":path", METHOD.key(), ":method", DISPATCH.key(), DispatchMarker.HEADER);
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
            "maxJobs",
            "maxResultBytes",
            "dispatch",
            "whenLate"));
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
    int maxResultBytes = (int) n.get("maxResultBytes").longValue(d.maxResultBytes(), 1, 64L << 20);
    DispatchPolicy dispatch = dispatch(n.get("dispatch"));
    Map<String, WhenLate> whenLate = whenLate(n.get("whenLate"), refs);
    if (enabled && classes.isEmpty() && routes.isEmpty() && whenLate.isEmpty()) {
      n.get("classes")
          .error(
              n.path()
                  + ".classes: empty while intake is enabled (expected: at least one class in"
                  + " intake.classes, route in intake.routes or class in intake.whenLate)");
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
        maxJobs,
        maxResultBytes,
        dispatch,
        whenLate);
  }

  /**
   * {@code whenLate}: a map of class name to {@code refuse} or {@code accept}. A class accepted
   * late must be one a Responses-shaped request can have ({@link Refs#responsesClasses}): its
   * client is answered with a Responses object and polls {@code statusPath}, and the job runs on
   * the Responses create path; a Chat Completions client could never read its id.
   */
  private static Map<String, WhenLate> whenLate(Node n, Refs refs) {
    Map<String, WhenLate> out = new LinkedHashMap<>();
    for (Map.Entry<String, Node> e : n.entries().entrySet()) {
      String name = e.getKey();
      Node v = e.getValue();
      if (!refs.classes().contains(name)) {
        v.invalid(name, "the name of a class in classes");
        continue;
      }
      String code = v.string("");
      WhenLate w = WhenLate.of(code);
      if (w == null) {
        v.invalid(code, "refuse or accept");
        continue;
      }
      if (w == WhenLate.ACCEPT && !refs.responsesClasses().contains(name)) {
        v.error(
            v.path()
                + ": accept, but no route serves class "
                + name
                + " in the Responses shape (expected: refuse, or a route with class: "
                + name
                + " and format: openai-responses or auto; a late request is answered with a"
                + " Responses object whose id its client polls on intake.statusPath)");
        continue;
      }
      out.put(name, w);
    }
    return out;
  }

  /** Headers a dispatched job's config may not set: the client's or the transport's own. */
  private static final Set<String> RESERVED =
      Set.of(
          DispatchMarker.HEADER,
          "content-type",
          "host",
          "connection",
          "content-length",
          "expect",
          "upgrade");

  private static DispatchPolicy dispatch(Node n) {
    DispatchPolicy d = DispatchPolicy.OFF;
    if (!n.present()) {
      return d;
    }
    n.only(Set.of("url", "markerKeyEnv", "headers", "timeout", "lease", "maxInFlight"));
    String url = n.get("url").string(d.url());
    if (!url.isEmpty() && !loopback(url)) {
      n.get("url")
          .invalid(
              url,
              "an http URL of a loopback listener (http://127.0.0.1:<port>, http://[::1]:<port>"
                  + " or http://localhost:<port>), without a path");
      url = d.url();
    }
    String markerKeyEnv = n.get("markerKeyEnv").string(d.markerKeyEnv());
    if (!markerKeyEnv.matches("[A-Za-z_][A-Za-z0-9_]*")) {
      n.get("markerKeyEnv").invalid(markerKeyEnv, "the name of an environment variable");
      markerKeyEnv = d.markerKeyEnv();
    }
    Map<String, String> headers = new LinkedHashMap<>();
    Node h = n.get("headers");
    if (h.present()) {
      for (Map.Entry<String, Node> e : h.entries().entrySet()) {
        String field = e.getValue().string("");
        String name = e.getKey().toLowerCase(java.util.Locale.ROOT);
        if (!DispatchPolicy.FIELDS.contains(field)) {
          e.getValue().invalid(field, "one of tenant, pool, class, route");
        } else if (!name.matches("[a-z0-9!#$%&'*+.^_`|~-]+") || RESERVED.contains(name)) {
          e.getValue()
              .invalid(
                  name,
                  "a request header name (not a pseudo-header, the marker, content-type, host,"
                      + " connection, content-length, expect or upgrade)");
        } else {
          headers.put(name, field);
        }
      }
    } else {
      headers.putAll(d.headers());
    }
    Duration timeout = between(n.get("timeout"), d.timeout(), Duration.ofSeconds(1), 1);
    Duration lease = between(n.get("lease"), d.lease(), Duration.ofSeconds(1), 1);
    if (lease.compareTo(timeout) <= 0) {
      n.get("lease")
          .invalid(
              ConfigWriter.duration(lease),
              "longer than intake.dispatch.timeout ("
                  + ConfigWriter.duration(timeout)
                  + "): a job still running would be claimed again");
      lease = timeout.plusSeconds(60);
    }
    int maxInFlight = n.get("maxInFlight").intValue(d.maxInFlight(), 1, 10_000);
    return new DispatchPolicy(url, markerKeyEnv, headers, timeout, lease, maxInFlight);
  }

  /** An http URL of a loopback host, port given, no path (the stored request's path follows). */
  static boolean loopback(String url) {
    java.net.URI u;
    try {
      u = new java.net.URI(url);
    } catch (java.net.URISyntaxException e) {
      return false;
    }
    String host = u.getHost();
    return "http".equals(u.getScheme())
        && host != null
        && (host.equals("127.0.0.1") || host.equals("[::1]") || host.equals("localhost"))
        && u.getPort() > 0
        && (u.getRawPath() == null || u.getRawPath().isEmpty())
        && u.getRawQuery() == null
        && u.getRawUserInfo() == null;
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
        .put("maxJobs", p.maxJobs())
        .put("maxResultBytes", p.maxResultBytes());
    ObjectNode wl = n.putObject("whenLate");
    p.whenLate().entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(e -> wl.put(e.getKey(), e.getValue().code()));
    DispatchPolicy d = p.dispatch();
    ObjectNode dn =
        n.putObject("dispatch")
            .put("url", d.url())
            .put("markerKeyEnv", d.markerKeyEnv()) // the variable's name, never its value
            .put("timeout", ConfigWriter.duration(d.timeout()))
            .put("lease", ConfigWriter.duration(d.lease()))
            .put("maxInFlight", d.maxInFlight());
    ObjectNode hn = dn.putObject("headers");
    d.headers().entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(e -> hn.put(e.getKey(), e.getValue()));
    return n;
  }
}

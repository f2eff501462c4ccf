package io.sluice.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.share.ReplicaPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * Reads YAML into a validated {@link SluiceConfig}: every error is collected with its YAML path and
 * the expected value; unknown keys are errors. Each top-level section has its own reader ({@code
 * *Section}, with the defaults taken from the policy records); this class orders them and passes
 * the names one section may refer to in another (routes → pools/classes, tenants → tiers).
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

  /**
   * Parses and validates with the installed sections ({@link ConfigSections#installed()}); throws
   * {@link ConfigException} listing every error.
   */
  public static SluiceConfig parse(String yaml) {
    return parse(yaml, ConfigSections.installed());
  }

  /** Parses and validates with these registered sections (after the built-in ones). */
  public static SluiceConfig parse(String yaml, ConfigSections sections) {
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
    Set<String> keys = new java.util.HashSet<>(BUILT_IN);
    sections.list().forEach(s -> keys.add(s.name()));
    r.only(keys);
    SluiceConfig config = build(r, yaml, sections);
    if (!errors.isEmpty()) {
      throw new ConfigException(errors);
    }
    return config;
  }

  /** The top-level keys this class reads itself. */
  private static final Set<String> BUILT_IN =
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
          "replicas");

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

  private static String firstLine(@Nullable String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  private static SluiceConfig build(Node r, String yaml, ConfigSections registered) {
    SluiceConfig.Server server = ServerSection.read(r.get("server"));
    SluiceConfig.Limits limits = ServerSection.limits(r.get("limits"));
    SluiceConfig.Estimation estimation = EstimationSection.read(r.get("estimation"));

    PoolsSection.Pools pools = PoolsSection.read(r.get("pools"));
    Map<String, ClassPolicy> classes = ClassesSection.read(r.get("classes"));
    Set<String> declaredPools = r.get("pools").entries().keySet();
    Set<String> declaredClasses = r.get("classes").entries().keySet();
    ClassesSection.check(r.get("classes"), classes, declaredPools, declaredClasses);

    Map<String, TierPolicy> tiers = TenantsSection.tiers(r.get("tiers"));
    SluiceConfig.Tenants tenants = TenantsSection.read(r.get("tenants"), tiers);
    Map<Signal, List<Source>> signals = SignalsSection.read(r.get("signals"), registered);
    String defaultPool = declaredPools.isEmpty() ? "default" : declaredPools.iterator().next();
    List<SluiceConfig.RouteRule> routes =
        RoutesSection.read(r.get("routes"), declaredPools, declaredClasses, defaultPool);
    SluiceConfig.Unmatched unmatched =
        RoutesSection.unmatched(r.get("unmatched"), declaredPools, declaredClasses, defaultPool);
    SluiceConfig.Responses responses = ResponsesSection.read(r.get("responses"));
    SluiceConfig.DecisionLog decisionLog = DecisionLogSection.read(r.get("decisionLog"));
    SluiceConfig.RateLimit rateLimit = RateLimitSection.read(r.get("rateLimit"));
    SluiceConfig.Quotas quotas = RateLimitSection.quotas(r.get("quotas"));
    ReplicaPolicy replicas = ReplicasSection.read(r.get("replicas"), pools.policies().keySet());
    SectionValues sections =
        SectionValues.read(
            r,
            registered,
            new ConfigSection.Refs(
                routes.stream().map(SluiceConfig.RouteRule::name).collect(Collectors.toSet()),
                declaredPools,
                declaredClasses,
                tiers.keySet(),
                RoutesSection.responsesClasses(routes, unmatched, signals, declaredClasses),
                ClassesSection.rungs(classes)));

    Map<String, PoolPolicy> poolPolicies =
        ToolQueues.withDepths(pools.policies(), sections.get(McpSection.SECTION));
    return new SluiceConfig(
        server,
        limits,
        estimation,
        poolPolicies.isEmpty() ? Map.of() : Collections.unmodifiableMap(poolPolicies),
        Collections.unmodifiableMap(classes),
        Collections.unmodifiableMap(tiers),
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
        Collections.unmodifiableMap(pools.modes()),
        sections);
  }
}

package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The {@code nativeMetadata} section (docs/envoy.md, "Envoy's native AI metadata"). Every error
 * names its YAML path and the value expected.
 *
 * <pre>
 * nativeMetadata:
 *   requestInfo: true                          # envoy.data.ai.v3.RequestInfo at the headers
 *   requestInfoNamespace: envoy.ai.request_info
 *   usage: true                                # envoy.data.ai.v3.TokenUsage at the end
 *   usageNamespace: envoy.ai.token_usage
 *   learnedBytesPerToken:                      # headers-only: content-length / learned ratio
 *     enabled: true
 *     warmup: 8                                # answers before a key's own ratio is used
 *     min: 1.5                                 # an answer's ratio is clamped to [min, max]
 *     max: 16
 *     maxKeys: 1024                            # pools, and pools with a model
 *     halfLife: 1h
 * </pre>
 */
public final class NativeMetadataSection implements ConfigSection<NativeMetadata> {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9_.\\-]{1,128}");

  /** The section, to read its value: {@code config.section(NativeMetadataSection.SECTION)}. */
  public static final NativeMetadataSection SECTION = new NativeMetadataSection();

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public NativeMetadataSection() {}

  @Override
  public String name() {
    return "nativeMetadata";
  }

  @Override
  public NativeMetadata defaults() {
    return NativeMetadata.DEFAULTS;
  }

  @Override
  public NativeMetadata read(Node n, Refs refs) {
    NativeMetadata d = NativeMetadata.DEFAULTS;
    n.only(
        Set.of(
            "requestInfo",
            "requestInfoNamespace",
            "usage",
            "usageNamespace",
            "learnedBytesPerToken"));
    return new NativeMetadata(
        n.get("requestInfo").bool(d.requestInfo()),
        namespace(n.get("requestInfoNamespace"), d.requestInfoNamespace()),
        n.get("usage").bool(d.usage()),
        namespace(n.get("usageNamespace"), d.usageNamespace()),
        learned(n.get("learnedBytesPerToken")));
  }

  private static NativeMetadata.LearnedRatio learned(Node n) {
    NativeMetadata.LearnedRatio d = NativeMetadata.LearnedRatio.DEFAULTS;
    n.only(Set.of("enabled", "warmup", "min", "max", "maxKeys", "halfLife"));
    double min = n.get("min").doubleValue(d.min(), 0.5, 64);
    double max = n.get("max").doubleValue(d.max(), 0.5, 64);
    if (max < min) {
      n.get("max").invalid(Double.toString(max), "a ratio >= min (" + min + ")");
      max = Math.max(min, d.max());
    }
    Duration halfLife = n.get("halfLife").duration(d.halfLife());
    if (halfLife.compareTo(Duration.ofSeconds(1)) < 0
        || halfLife.compareTo(Duration.ofDays(7)) > 0) {
      n.get("halfLife").invalid(ConfigWriter.duration(halfLife), "a duration in 1s..168h");
      halfLife = d.halfLife();
    }
    return new NativeMetadata.LearnedRatio(
        n.get("enabled").bool(d.enabled()),
        n.get("warmup").intValue(d.warmup(), 1, 100_000),
        min,
        max,
        n.get("maxKeys").intValue(d.maxKeys(), 1, 1_000_000),
        halfLife);
  }

  private static String namespace(Node n, String def) {
    String s = n.string(def);
    if (!NAMESPACE.matcher(s).matches()) {
      n.invalid(s, "a metadata namespace (letters, digits, '.', '_', '-'; 1..128 characters)");
      return def;
    }
    return s;
  }

  @Override
  public ObjectNode write(NativeMetadata v) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("requestInfo", v.requestInfo());
    n.put("requestInfoNamespace", v.requestInfoNamespace());
    n.put("usage", v.usage());
    n.put("usageNamespace", v.usageNamespace());
    NativeMetadata.LearnedRatio l = v.learnedBytesPerToken();
    ObjectNode lr = n.putObject("learnedBytesPerToken");
    lr.put("enabled", l.enabled());
    lr.put("warmup", l.warmup());
    lr.put("min", l.min());
    lr.put("max", l.max());
    lr.put("maxKeys", l.maxKeys());
    lr.put("halfLife", ConfigWriter.duration(l.halfLife()));
    return n;
  }
}

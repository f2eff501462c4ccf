package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
    n.only(Set.of("requestInfo", "requestInfoNamespace", "usage", "usageNamespace"));
    return new NativeMetadata(
        n.get("requestInfo").bool(d.requestInfo()),
        namespace(n.get("requestInfoNamespace"), d.requestInfoNamespace()),
        n.get("usage").bool(d.usage()),
        namespace(n.get("usageNamespace"), d.usageNamespace()));
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
    return n;
  }
}

package io.sluice.envoyconfig;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.LocalReplyConfig;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.HttpHeaders;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code local_reply_config} of a shipped Envoy bootstrap (parsed into Envoy's own protos)
 * applied to a local reply as Envoy's {@code LocalReplyImpl} applies it, for the subset Sluice
 * ships: mappers whose filter is a {@code response_flag_filter}, first match wins, {@code
 * headers_to_add} overwrite, {@code body_format_override.json_format} with {@code %RESPONSE_CODE%}
 * (a number when it is a whole value) and {@code %RESPONSE_CODE_DETAILS%}, its {@code
 * content_type}. The emulator sets no response flags: they come from the reply's details ({@link
 * #flag}), as Envoy's router sets them with those details.
 */
public final class LocalReplyMappers {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final LocalReplyConfig config;

  private LocalReplyMappers(LocalReplyConfig config) {
    this.config = config;
  }

  /** The local_reply_config of the bootstrap's HCM on port 10000. */
  public static LocalReplyMappers load(Path envoyYaml) throws IOException {
    Bootstrap b = EnvoyBootstrapParser.parseFile(envoyYaml);
    HttpConnectionManager hcm =
        b.getStaticResources().getListenersList().stream()
            .filter(l -> l.getAddress().getSocketAddress().getPortValue() == 10000)
            .findFirst()
            .orElseThrow()
            .getFilterChains(0)
            .getFilters(0)
            .getTypedConfig()
            .unpack(HttpConnectionManager.class);
    return new LocalReplyMappers(hcm.getLocalReplyConfig());
  }

  public LocalReplyConfig config() {
    return config;
  }

  /**
   * The response flag Envoy's router sets with these details: {@code UT} for the route timeout,
   * {@code UR}/{@code UF} for a reset before the response (remote reset, connection failure), else
   * none.
   */
  public static Optional<String> flag(String details) {
    if (details.equals("upstream_response_timeout")) {
      return Optional.of("UT");
    }
    if (details.startsWith("upstream_reset_before_response_started{connection_failure")) {
      return Optional.of("UF");
    }
    if (details.startsWith("upstream_reset_before_response_started")) {
      return Optional.of("UR");
    }
    return Optional.empty();
  }

  /** The first mapper matching {@code flag}, if any. */
  public Optional<ResponseMapper> mapper(String flag) {
    return config.getMappersList().stream()
        .filter(m -> m.getFilter().getResponseFlagFilter().getFlagsList().contains(flag))
        .findFirst();
  }

  /** The local reply {@code r} as the client gets it through the mappers. */
  public HttpResult apply(HttpResult r) {
    Optional<ResponseMapper> m = flag(r.responseCodeDetails()).flatMap(this::mapper);
    if (m.isEmpty()) {
      return r;
    }
    ResponseMapper mapper = m.get();
    int status = mapper.hasStatusCode() ? mapper.getStatusCode().getValue() : r.status();
    HttpHeaders headers = r.headers().copy();
    for (HeaderValueOption h : mapper.getHeadersToAddList()) {
      headers.set(h.getHeader().getKey(), h.getHeader().getValue());
    }
    byte[] body = r.body();
    if (mapper.hasBodyFormatOverride()) {
      var format = mapper.getBodyFormatOverride();
      body = render(format.getJsonFormat(), status, r.responseCodeDetails());
      headers.set(
          "content-type",
          format.getContentType().isEmpty() ? "application/json" : format.getContentType());
    }
    headers.set("content-length", Integer.toString(body.length));
    return new HttpResult(
        r.outcome(),
        status,
        headers,
        List.of(body),
        r.responseCodeDetails(),
        r.dynamicMetadata(),
        r.extProcBypassed(),
        r.upstreamRequest(),
        r.timeToResponseHeaders(),
        r.timeToFirstByte(),
        r.total(),
        r.routeName(),
        r.routerTimeout(),
        r.trailers());
  }

  private static byte[] render(Struct format, int status, String details) {
    try {
      ObjectNode n = (ObjectNode) JSON.readTree(JsonFormat.printer().print(format));
      substitute(n, status, details);
      return JSON.writeValueAsBytes(n);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void substitute(ObjectNode n, int status, String details) {
    List<Map.Entry<String, com.fasterxml.jackson.databind.JsonNode>> entries =
        new java.util.ArrayList<>();
    n.fields().forEachRemaining(entries::add);
    for (Map.Entry<String, com.fasterxml.jackson.databind.JsonNode> e : entries) {
      var v = e.getValue();
      if (v instanceof ObjectNode o) {
        substitute(o, status, details);
      } else if (v.isTextual()) {
        String s = v.asText();
        if (s.equals("%RESPONSE_CODE%")) {
          n.put(e.getKey(), status); // a whole-value command keeps its type
        } else {
          n.put(
              e.getKey(),
              s.replace("%RESPONSE_CODE%", Integer.toString(status))
                  .replace("%RESPONSE_CODE_DETAILS%", details));
        }
      }
    }
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
